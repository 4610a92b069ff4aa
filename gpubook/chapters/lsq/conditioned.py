"""Part 8.3's conditioning family on the device: A = U diag(σ) Vᵀ (measure.conditioned,
singular values from 1 to κ), and ||QᵀQ − I||_F (gpubook.orthogonality) of each method
at each κ: CholeskyQR (one pass, CholeskyQR2's Q1), CholeskyQR2 with no limit and no
fallback, shifted CholeskyQR3 and the method chosen from the estimate (shifted.py).
None where a method broke down or refused (ConditionError). `family` measures it,
`figures.draw_conditioning` draws it, and the claims below read it (kind "cause": each
tests the mechanism, κ² u, against what the run shows)."""
import numpy as np

from ... import vendor
from ...claims import claim
from . import measure, shifted

KAPPAS = (1e2, 1e4, 1e6, 1e8, 1e10, 1e12, 1e14)
FLOOR = 1e-13         # ||QᵀQ − I||_F of a Q orthonormal to rounding: about 450 u, the floor the chapter asks of a QR
U = shifted.U
CLEAN, BROKEN = 1e-2, 1e2      # κ² u at most CLEAN: the Gram matrix keeps its smallest eigenvalue;
                               # at least BROKEN: its rounding swamps it a hundred times over
METHODS = ("CholeskyQR", "CholeskyQR2", "shifted CholeskyQR3", "chosen")


def family(ctx, queue, m, n, kappas=KAPPAS, seed=7, repeats=None, **options):
    """[{cond, rows, cols, seed, kappa2u, predicted_q1, CholeskyQR, CholeskyQR2, shifted CholeskyQR3,
    chosen (||QᵀQ − I||_F or None), chosen_method, reason, estimate, residual
    (||Q R − A||_F / ||A||_F of the chosen method), why (ConditionError text by method),
    seconds ({method: median device seconds of `repeats` runs, measure.time_factor})}]
    for U diag Vᵀ of m x n at each κ. options: CholeskyQR2's keywords (tile shapes)."""
    # as many runs as cuSOLVER's QR beside it (vendor's "qr"; it was 3: two runs of the
    # family on an H200, 2026-11-29, gave the chosen method at κ = 1e14 0.96× and 0.81×
    # cuSOLVER's time)
    repeats = vendor.FIGURES["qr"].repeats if repeats is None else repeats
    plain = shifted.Chosen(ctx, queue, n, limit=np.inf, max_shifts=0, **options)
    three = shifted.Shifted3(ctx, queue, n, **options)
    chosen = shifted.Chosen(ctx, queue, n, **options)
    rows = []
    for cond in kappas:
        a = measure.conditioned(m, n, cond, seed)
        row = {"cond": cond, "rows": m, "cols": n, "seed": seed, "kappa2u": cond * cond * U, "why": {},
               "predicted_q1": shifted.predicted_q1_condition(a), "seconds": {}}
        for name, cq in (("CholeskyQR2", plain), ("shifted CholeskyQR3", three), ("chosen", chosen)):
            try:
                r = cq.r_factor(a)
                q = cq.q()
                row[name] = measure.orthogonality(q)
                if name == "chosen":
                    row["residual"] = float(np.linalg.norm(q @ r - a) / np.linalg.norm(a))
                    row.update(chosen_method=cq.method, reason=cq.reason, estimate=cq.cond_estimate)
                row["seconds"][name] = measure.time_factor(cq, a, repeats)[0]["median_s"]
            except shifted.ConditionError as err:
                row[name], row["why"][name] = None, str(err)
                if name == "chosen":
                    row.update(chosen_method=None, reason=str(err), estimate=None, residual=None)
            if name == "CholeskyQR2":          # its first pass: CholeskyQR's Q1, where it factored
                row["CholeskyQR"] = (measure.orthogonality(plain.last_input()) if plain._status(0)
                                     and np.isfinite(plain.estimates[0]) else None)
        rows.append(row)
    return rows


def with_vendor(device, rows):
    """cuSOLVER's QR (gpubook.vendor's "qr", through PyTorch) of each row's own matrix,
    in one process: its ||QᵀQ − I||_F under "cuSOLVER" and its seconds under
    seconds["cuSOLVER"]. Returns '' where it ran, else why not (the rows unchanged)."""
    found = vendor.measure_each(device, "qr", [(r["rows"], r["cols"], r["cond"], r["seed"]) for r in rows],
                                quiet=True)
    if not found or not all(found):
        return "no NVIDIA library ran on this device" if found is None else "PyTorch's QR failed on a matrix"
    for row, entry in zip(rows, found):
        row["cuSOLVER"] = entry.get("orthogonality")
        row["seconds"]["cuSOLVER"] = entry["median_s"]
    return ""


def vendor_claim(rows, where, why="", units="FMA register tiles"):
    """lsq_chosen_vs_cusolver: the chosen method's device time against cuSOLVER's QR of
    the same matrix, at every κ (with_vendor); unsettled where cuSOLVER did not run.
    units: what ran the methods' products."""
    both = [r for r in rows if r["seconds"].get("chosen") and r["seconds"].get("cuSOLVER")]
    ratio = [r["seconds"]["chosen"] / r["seconds"]["cuSOLVER"] for r in both]
    first, last = (both[0], both[-1]) if both else ({}, {})
    ms = [1e3 * r["seconds"]["cuSOLVER"] for r in both]
    return claim(
        "lsq_chosen_vs_cusolver", "n == total and faster == n",
        "The chosen method, on the {units}, took {first_ms:.2f} ms at κ = {first:.0e} and {last_ms:.2f} ms at "
        "κ = {last:.0e} ({last_method}), and cuSOLVER's QR of the same {where} matrices "
        "{lo:.2f}-{hi:.2f} ms: the choice was faster at all {n:.0f} (at worst {worst:.2f}× cuSOLVER's time)",
        "The chosen method was faster than cuSOLVER's QR of the same {where} matrices at {faster:.0f} "
        "of {total:.0f} (at worst {worst:.2f}× its time)",
        missing="cuSOLVER's QR of these matrices has no time here: " + (why or "{names} missing"),
        where=where, units=units, total=len(rows), n=len(both) or None, faster=sum(x < 1 for x in ratio),
        worst=max(ratio, default=None), first=first.get("cond"), last=last.get("cond"),
        first_ms=1e3 * first["seconds"]["chosen"] if both else None,
        last_ms=1e3 * last["seconds"]["chosen"] if both else None, last_method=last.get("chosen_method"),
        lo=min(ms, default=None), hi=max(ms, default=None))


def _fails(v):
    return v is None or v > FLOOR


def _slope(rows):
    """The slope of log ||Q1ᵀQ1 − I|| against log κ where κ² u <= CLEAN (least squares)."""
    pts = [(np.log10(r["cond"]), np.log10(r["CholeskyQR"])) for r in rows
           if r["kappa2u"] <= CLEAN and r.get("CholeskyQR")]
    if len(pts) < 2:
        return None, len(pts)
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0]), len(pts)


def conditioning_claims(rows, where):
    """Part 8.3's four claims (kind "cause") on `family`'s rows; `where` names the
    matrices ("2,000 × 50")."""
    slope, points = _slope(rows)
    made = [claim(
        "lsq_cholqr_squares", "points >= 2 and 1.5 <= slope <= 2.5",
        "One pass of CholeskyQR loses orthogonality like κ² u: on the {where} matrices with κ² u at most "
        "1e-2, ‖Q₁ᵀQ₁ − I‖_F grows as κ to the power {slope:.2f} ({points:.0f} points), not like κ u "
        "(power 1), which the Gram matrix's rounding would not give",
        "On the {where} matrices with κ² u at most 1e-2, ‖Q₁ᵀQ₁ − I‖_F grows as κ to the power "
        "{slope:.2f} ({points:.0f} points): not the square that the Gram matrix's κ² predicts (1.5 to 2.5)",
        missing="Fewer than two matrices with κ² u at most 1e-2 were factored by CholeskyQR here",
        glue=False, kind="cause", slope=slope, points=points, where=where)]
    below = [r for r in rows if r["kappa2u"] <= CLEAN]
    above = [r for r in rows if r["kappa2u"] >= BROKEN]
    clean = max((r["CholeskyQR2"] for r in below if not _fails(r["CholeskyQR2"])), default=None)

    def lost_it(v):      # broke down, or an order of magnitude worse than where the Gram is clean
        return _fails(v) or (clean is not None and v > 10 * clean)
    made.append(claim(
        "lsq_cholqr2_limit", "n_below >= 1 and n_above >= 1 and held_below == n_below "
                             "and failed_above == n_above",
        "CholeskyQR2 fails where κ² u passes 1: on the {where} matrices it keeps ‖QᵀQ − I‖_F within "
        "{floor:.0e} (at most {clean:.1e}) at all {n_below:.0f} with κ² u ≤ 1e-2 (κ up to "
        "{top_below:.0e}), and at all {n_above:.0f} with κ² u ≥ 1e2 (κ from {low_above:.0e}) it breaks "
        "down or ends ten times or more above that",
        "On the {where} matrices CholeskyQR2 kept ‖QᵀQ − I‖_F within {floor:.0e} at {held_below:.0f} "
        "of {n_below:.0f} with κ² u ≤ 1e-2 and broke down or lost an order of magnitude at "
        "{failed_above:.0f} of {n_above:.0f} with κ² u ≥ 1e2: its limit is not where κ² u predicts",
        glue=False, kind="cause", where=where, floor=FLOOR, n_below=len(below), n_above=len(above),
        held_below=sum(not _fails(r["CholeskyQR2"]) for r in below), clean=clean,
        failed_above=sum(lost_it(r["CholeskyQR2"]) for r in above),
        top_below=max((r["cond"] for r in below), default=None),
        low_above=min((r["cond"] for r in above), default=None)))
    lost = [r for r in rows if lost_it(r["CholeskyQR2"])]     # as the claim above counts it
    rescue = [r for r in lost if r["predicted_q1"] ** 2 * U <= CLEAN]
    beyond = [r for r in lost if r["predicted_q1"] ** 2 * U >= BROKEN]
    made.append(claim(
        "lsq_shift_rescues", "n_rescue >= 1 and rescued == n_rescue and refused == n_beyond",
        "The shift is what saves shifted CholeskyQR3: where CholeskyQR2 broke down or lost an order of "
        "magnitude and the shift leaves Q₁ with κ² u ≤ 1e-2 ({n_rescue:.0f} of the {where} matrices, "
        "κ up to {top_rescue:.0e}), it keeps ‖QᵀQ − I‖_F within {floor:.0e} (worst {worst:.1e}); "
        "where even Q₁ has κ² u ≥ 1e2 ({n_beyond:.0f}) it refuses with an error instead of giving a Q",
        "Shifted CholeskyQR3 kept ‖QᵀQ − I‖_F within {floor:.0e} at {rescued:.0f} of the {n_rescue:.0f} "
        "{where} matrices where the shift leaves Q₁ with κ² u ≤ 1e-2, and refused {refused:.0f} of the "
        "{n_beyond:.0f} where Q₁ keeps κ² u ≥ 1e2: the shift does not explain what it did",
        glue=False, kind="cause", where=where, floor=FLOOR, n_rescue=len(rescue), n_beyond=len(beyond),
        rescued=sum(not _fails(r["shifted CholeskyQR3"]) for r in rescue),
        refused=sum(r["shifted CholeskyQR3"] is None for r in beyond),
        top_rescue=max((r["cond"] for r in rescue), default=None),
        worst=max((r["shifted CholeskyQR3"] for r in rescue if r["shifted CholeskyQR3"] is not None),
                  default=0.0)))        # shown only where all of them held
    cols = rows[0]["cols"] if rows else None
    plain = [r for r in rows if r["cond"] * cols <= shifted.LIMIT]
    shift = [r for r in rows if r["kappa2u"] >= 1]
    made.append(claim(
        "lsq_chosen_estimate", "n >= 1 and ok == n and n_plain >= 1 and plain == n_plain "
                               "and shifted == n_shift",
        "The estimate picks the method: from κ_F(R₁) = ‖R₁‖_F ‖R₁⁻¹‖_F, which overstates κ by at most "
        "the {cols:.0f} columns, of the {where} matrices the choice ran plain CholeskyQR2 on all "
        "{n_plain:.0f} with κ · {cols:.0f} ≤ {limit:.0e}, a shift on all {n_shift:.0f} with κ² u ≥ 1, "
        "and kept ‖QᵀQ − I‖_F within {floor:.0e} on all {n:.0f} (worst {worst:.1e})",
        "The choice kept ‖QᵀQ − I‖_F within {floor:.0e} on {ok:.0f} of {n:.0f} {where} matrices, ran "
        "plain CholeskyQR2 on {plain:.0f} of the {n_plain:.0f} with κ · {cols:.0f} ≤ {limit:.0e} and a "
        "shift on {shifted:.0f} of the {n_shift:.0f} with κ² u ≥ 1: the estimate does not track κ",
        glue=False, kind="cause", where=where, floor=FLOOR, limit=shifted.LIMIT, cols=cols, n=len(rows),
        ok=sum(not _fails(r["chosen"]) for r in rows), n_plain=len(plain), n_shift=len(shift),
        plain=sum(r["chosen_method"] == "CholeskyQR2" for r in plain),
        shifted=sum(bool(r["chosen_method"]) and r["chosen_method"].startswith("shifted") for r in shift),
        worst=max((r["chosen"] for r in rows if r["chosen"] is not None), default=0.0)))
    return made


def for_record(rows):
    """`family`'s rows for the chapter's record (JSON): an infinite estimate (A's own
    Cholesky broke down) as None."""
    def clean(v):
        return None if isinstance(v, float) and not np.isfinite(v) else v
    return [{k: clean(v) for k, v in r.items()} for r in rows]
