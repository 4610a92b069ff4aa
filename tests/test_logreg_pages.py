"""The steps chapters 1 and 2 share between their main line and their Going-further
page (gpubook/chapters/logreg/pages.py)."""
import math

from gpubook.chapters.logreg import pages as lp


def test_bend_fit_recovers_the_model_it_fits():
    J, iterations, (a, b, c) = 2048, 100, (2e-9, 5e-9, 3e-7)
    sweep = [{"work_items": n, "median_s": iterations * (a * J / n + b * n + c)}
             for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)]
    fa, fb, fc, best = lp.bend_fit(sweep, J, iterations)
    assert math.isclose(fa, a, rel_tol=1e-6) and math.isclose(fb, b, rel_tol=1e-6)
    assert math.isclose(fc, c, rel_tol=1e-6)
    assert math.isclose(best, math.sqrt(a * J / b), rel_tol=1e-6)


def test_bend_fit_gives_no_optimum_without_a_growing_term():
    sweep = [{"work_items": n, "median_s": 8 / n - 0.05 * n + 1} for n in (1, 2, 4, 8)]
    assert math.isnan(lp.bend_fit(sweep, 8, 1)[3])


def test_loop_counts_and_the_memory_table():
    accesses, visits = lp.loop_counts(2048, 8, 64)
    assert accesses == {"naive": 3 * 2048 * 8 + 2 * 2048, "reordered": 2 * 2048 * 8 + 3 * 2048,
                        "merged": 2048 * 8 + 2048}
    assert visits == {"naive": 9 * 1024, "reordered": 2 * 1024, "merged": 1024}
    rows = lp.access_rows(accesses, visits, {s: 1e4 for s in accesses}, 64)
    assert rows[0][3] == "64-byte lines of X visited" and [r[0] for r in rows[1:]] == list(accesses)
    assert rows[3][-1] == f"{1e9 / (1e4 * accesses['merged']):.1f}"
