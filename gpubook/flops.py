"""Operation counts that a chapter divides by its time and chapter 9 reads back
from the records: one formula per quantity, in one place."""


def qr_flops(m, n):
    """LAPACK's count for a Householder QR of an m x n matrix."""
    return 2 * m * n * n - 2 * n**3 / 3
