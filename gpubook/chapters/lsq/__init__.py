"""Chapter 8: least squares by QR updates, blocked Householder, CholeskyQR2 and TSQR,
and every subset at once (float64)."""
from ...flops import qr_flops  # noqa: F401
from ...subsets import unrank, subsets_numpy, SubsetSearch  # noqa: F401
from .rows import (STEPS, TOL, packed_size, row_start, Factor, includ_reference, include_row, sing,
                   factor_error, rss_lstsq, make_problem, Includ, MillerForm, BlockedQR, TiledQR,
                   resources_in_words, includ_flops, row_group_sizes, panel_widths, time_includ,
                   time_blocked, gram_error, cross_products)  # noqa: F401
from .blocked import checked_rows  # noqa: F401
from .tsqr import TSQR  # noqa: F401
from .cholqr import CholeskyQR2  # noqa: F401
from . import blocked, cholqr, figures, measure, mixed, pages, rows, tiled, tsqr  # noqa: F401
