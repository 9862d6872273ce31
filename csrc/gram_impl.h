/* Template for gram.c: included once per precision with REAL, REAL_MAX,
 * SUF(name), GEMM_T and EXPNEG defined. No include guard on purpose.
 * The squared-distance tile (ml_sqdist_*) is the one shared with pairwise.c;
 * the Gram kernels fuse their exp into its last pass. */

void SUF(ml_sqdist_free)(SUF(ml_sqdist) *op) {
    free(op->YT);
    if (op->Yc != op->Xc) free(op->Yc);
    free(op->Xc);
    if (op->nyc != op->nxc) free(op->nyc);
    free(op->nxc);
    memset(op, 0, sizeof *op);
}

/* Centered copies of X (and Y) and their squared row norms for the GEMM
 * form; the mean is X's column mean, summed in row order. */
static int SUF(ml_sqdist_center)(SUF(ml_sqdist) *op, const REAL *X,
                                 const REAL *Y, int sym) {
    const ptrdiff_t nx = op->nx, ny = op->ny, d = op->d;
    double *mean = calloc((size_t)d, sizeof(double));
    op->Xc = malloc(sizeof(REAL) * (size_t)(nx * d > 0 ? nx * d : 1));
    op->nxc = malloc(sizeof(REAL) * (size_t)(nx > 0 ? nx : 1));
    if (sym) {
        op->Yc = op->Xc;
        op->nyc = op->nxc;
    } else {
        op->Yc = malloc(sizeof(REAL) * (size_t)(ny * d > 0 ? ny * d : 1));
        op->nyc = malloc(sizeof(REAL) * (size_t)(ny > 0 ? ny : 1));
    }
    if (!mean || !op->Xc || !op->nxc || !op->Yc || !op->nyc) {
        free(mean);
        return ML_ERR_ALLOC;
    }
    for (ptrdiff_t i = 0; i < nx; i++)
        for (ptrdiff_t k = 0; k < d; k++) mean[k] += (double)X[i * d + k];
    for (ptrdiff_t k = 0; k < d; k++) mean[k] /= (double)(nx > 0 ? nx : 1);
    for (int pass = 0; pass < (sym ? 1 : 2); pass++) {
        const REAL *A = pass ? Y : X;
        ptrdiff_t n = pass ? ny : nx;
        REAL *Ac = pass ? op->Yc : op->Xc, *na = pass ? op->nyc : op->nxc;
        for (ptrdiff_t i = 0; i < n; i++) {
            double acc = 0.0;
            for (ptrdiff_t k = 0; k < d; k++) {
                double v = (double)A[i * d + k] - mean[k];
                Ac[i * d + k] = (REAL)v;
                acc += (double)Ac[i * d + k] * (double)Ac[i * d + k];
            }
            na[i] = (REAL)acc;
        }
    }
    free(mean);
    return ML_OK;
}

int SUF(ml_sqdist_init)(SUF(ml_sqdist) *op, const REAL *X, ptrdiff_t nx,
                        const REAL *Y, ptrdiff_t ny, ptrdiff_t d, GEMM_T gemm) {
    memset(op, 0, sizeof *op);
    int sym = (Y == NULL);
    if (sym) {
        Y = X;
        ny = nx;
    }
    if (nx < 0 || ny < 0 || d < 1 || nx > INT_MAX || ny > INT_MAX || d > INT_MAX)
        return ML_ERR_ARG;
    op->nx = nx;
    op->ny = ny;
    op->d = d;
    op->X = X;
    op->gemm = gemm;
    op->direct = (gemm == NULL || d <= ML_GRAM_DIRECT_MAX_D);
    if (!op->direct) return SUF(ml_sqdist_center)(op, X, Y, sym);
    op->YT = malloc(sizeof(REAL) * (size_t)(ny * d > 0 ? ny * d : 1));
    if (!op->YT) return ML_ERR_ALLOC;
    for (ptrdiff_t i = 0; i < ny; i++)
        for (ptrdiff_t k = 0; k < d; k++) op->YT[k * ny + i] = Y[i * d + k];
    return ML_OK;
}

/* out[ii, jj] = sum_k (x_{i0+ii, k} - y_{j0+jj, k})^2 by direct differences,
 * then exp(scale * that) if with_exp; acc holds one row of nj partial sums. */
ML_CLONES
static void SUF(ml_tile_direct)(const REAL *ML_RESTRICT X, ptrdiff_t i0,
                                ptrdiff_t ni, const REAL *ML_RESTRICT YT,
                                ptrdiff_t ny, ptrdiff_t j0, ptrdiff_t nj,
                                ptrdiff_t d, int with_exp, REAL scale,
                                REAL *ML_RESTRICT out, ptrdiff_t ldo,
                                REAL *ML_RESTRICT acc) {
    for (ptrdiff_t ii = 0; ii < ni; ii++) {
        const REAL *x = X + (i0 + ii) * d;
        {
            const REAL x0 = x[0];
            const REAL *y = YT + j0;
            for (ptrdiff_t jj = 0; jj < nj; jj++) {
                REAL t = x0 - y[jj];
                acc[jj] = t * t;
            }
        }
        for (ptrdiff_t k = 1; k < d; k++) {
            const REAL xk = x[k];
            const REAL *y = YT + k * ny + j0;
            for (ptrdiff_t jj = 0; jj < nj; jj++) {
                REAL t = xk - y[jj];
                acc[jj] += t * t;
            }
        }
        REAL *o = out + ii * ldo;
        if (with_exp)
            for (ptrdiff_t jj = 0; jj < nj; jj++) o[jj] = EXPNEG(acc[jj] * scale);
        else
            for (ptrdiff_t jj = 0; jj < nj; jj++) o[jj] = acc[jj];
    }
}

/* The fused pass after the tile's gemm: dot products (src) -> squared
 * distances (clamped at 0) -> exp if with_exp, written to dst (src == dst
 * allowed). */
ML_CLONES
static void SUF(ml_tile_finish)(const REAL *ML_RESTRICT nx, const REAL *ML_RESTRICT ny,
                                ptrdiff_t ni, ptrdiff_t nj, int with_exp,
                                REAL scale, const REAL *src, ptrdiff_t lds,
                                REAL *dst, ptrdiff_t ldd) {
    for (ptrdiff_t ii = 0; ii < ni; ii++) {
        const REAL *s = src + ii * lds;
        REAL *o = dst + ii * ldd;
        const REAL a = nx[ii];
        if (with_exp) {
#pragma omp simd
            for (ptrdiff_t jj = 0; jj < nj; jj++) {
                REAL d2 = (a + ny[jj]) - 2 * s[jj];
                d2 = d2 > 0 ? d2 : 0;
                o[jj] = EXPNEG(d2 * scale);
            }
        } else {
#pragma omp simd
            for (ptrdiff_t jj = 0; jj < nj; jj++) {
                REAL d2 = (a + ny[jj]) - 2 * s[jj];
                o[jj] = d2 > 0 ? d2 : 0;
            }
        }
    }
}

void SUF(ml_sqdist_tile)(const SUF(ml_sqdist) *op, ptrdiff_t i0, ptrdiff_t ni,
                         ptrdiff_t j0, ptrdiff_t nj, int with_exp, REAL scale,
                         REAL *dst, ptrdiff_t ldd, REAL *buf, REAL *acc) {
    if (op->direct) {
        SUF(ml_tile_direct)(op->X, i0, ni, op->YT, op->ny, j0, nj, op->d,
                            with_exp, scale, dst, ldd, acc);
        return;
    }
    /* Row-major buf (ni x nj) = Xc_blk Yc_blk^T is column-major
     * buf^T (nj x ni) = Yc_blk (as d x nj, transposed) ^T * Xc_blk (d x ni).
     * The tile stays in L2 between the gemm and the fused pass. */
    char ta = 'T', tb = 'N';
    int m = (int)nj, n = (int)ni, k = (int)op->d, lda = (int)op->d,
        ldb = (int)op->d, ldc = ML_GRAM_TILE;
    REAL one = 1, zero = 0;
    op->gemm(&ta, &tb, &m, &n, &k, &one, op->Yc + j0 * op->d, &lda,
             op->Xc + i0 * op->d, &ldb, &zero, buf, &ldc);
    SUF(ml_tile_finish)(op->nxc + i0, op->nyc + j0, ni, nj, with_exp, scale, buf,
                        ML_GRAM_TILE, dst, ldd);
}

/* -1 / (2 sigma^2), clamped to -REAL_MAX; ML_ERR_ARG unless sigma > 0 finite. */
static int SUF(ml_gram_scale)(double sigma, REAL *scale) {
    if (!(sigma > 0.0) || !isfinite(sigma)) return ML_ERR_ARG;
    double s = -1.0 / (2.0 * sigma * sigma);
    *scale = (REAL)(s < -(double)REAL_MAX ? -(double)REAL_MAX : s);
    return ML_OK;
}

/* The start of every Gram kernel: the exponent's scale (sigma checked) and
 * the squared-distance operands of X and Y (Y NULL: X); *nx and *ny become the
 * operands' row counts.  On failure nothing is left to free. */
static int SUF(ml_gram_begin)(SUF(ml_sqdist) *op, REAL *scale, const REAL *X,
                              ptrdiff_t *nx, const REAL *Y, ptrdiff_t *ny,
                              ptrdiff_t d, double sigma, GEMM_T gemm) {
    int status = SUF(ml_gram_scale)(sigma, scale);
    if (status != ML_OK) return status;
    status = SUF(ml_sqdist_init)(op, X, *nx, Y, *ny, d, gemm);
    if (status != ML_OK) {
        SUF(ml_sqdist_free)(op);
        return status;
    }
    *nx = op->nx;
    *ny = op->ny;
    return ML_OK;
}

/* Write a tile held in buf (ni x nj, ld ML_GRAM_TILE) to G at (i0, j0) and,
 * in the symmetric case, transposed at (j0, i0) (through buf2, so that both
 * writes are contiguous rows). A diagonal tile (i0 == j0) is
 * written from its upper triangle only, with a unit diagonal, so that G is
 * exactly symmetric whatever the rounding of the GEMM. */
static void SUF(ml_store_tile)(REAL *G, ptrdiff_t ld, ptrdiff_t i0,
                               ptrdiff_t ni, ptrdiff_t j0, ptrdiff_t nj,
                               const REAL *buf, REAL *buf2, int sym) {
    const ptrdiff_t T = ML_GRAM_TILE;
    if (sym && i0 == j0) {
        for (ptrdiff_t ii = 0; ii < ni; ii++) {
            REAL *g = buf2 + ii * T;
            for (ptrdiff_t jj = 0; jj < ii; jj++) g[jj] = buf[jj * T + ii];
            g[ii] = 1;
            for (ptrdiff_t jj = ii + 1; jj < nj; jj++) g[jj] = buf[ii * T + jj];
            ML_COPY_ROW(G + (i0 + ii) * ld + j0, g, nj);
        }
        return;
    }
    for (ptrdiff_t ii = 0; ii < ni; ii++)
        ML_COPY_ROW(G + (i0 + ii) * ld + j0, buf + ii * T, nj);
    if (!sym) return;
    /* buf2 = buf^T in 8 x 8 blocks (both in L2) */
    for (ptrdiff_t ib = 0; ib < ni; ib += 8) {
        ptrdiff_t ie = ib + 8 < ni ? ib + 8 : ni;
        for (ptrdiff_t jb = 0; jb < nj; jb += 8) {
            ptrdiff_t je = jb + 8 < nj ? jb + 8 : nj;
            for (ptrdiff_t ii = ib; ii < ie; ii++)
                for (ptrdiff_t jj = jb; jj < je; jj++) buf2[jj * T + ii] = buf[ii * T + jj];
        }
    }
    for (ptrdiff_t jj = 0; jj < nj; jj++)
        ML_COPY_ROW(G + (j0 + jj) * ld + i0, buf2 + jj * T, ni);
}

/* nt threads' scratch of per_thread REALs each; NULL (and op freed) when the
 * allocation fails. */
static REAL *SUF(ml_gram_work)(SUF(ml_sqdist) *op, ptrdiff_t per_thread, int nt) {
    REAL *work = malloc(sizeof(REAL) * (size_t)(per_thread * nt));
    if (!work) SUF(ml_sqdist_free)(op);
    return work;
}

int SUF(ml_gaussian_gram)(const REAL *X, ptrdiff_t nx, const REAL *Y,
                          ptrdiff_t ny, ptrdiff_t d, double sigma, REAL *G,
                          GEMM_T gemm, int n_threads) {
    const int sym = (Y == NULL);
    SUF(ml_sqdist) op;
    REAL scale;
    int status = SUF(ml_gram_begin)(&op, &scale, X, &nx, Y, &ny, d, sigma, gemm);
    if (status != ML_OK) return status;
    if (nx == 0 || ny == 0) {
        SUF(ml_sqdist_free)(&op);
        return ML_OK;
    }
    const ptrdiff_t T = ML_GRAM_TILE;
    const ptrdiff_t nbx = (nx + T - 1) / T, nby = (ny + T - 1) / T;
    const ptrdiff_t ntasks = sym ? nbx * (nbx + 1) / 2 : nbx * nby;
    const int nt = ml_threads(n_threads);
    const ptrdiff_t per_thread = 2 * T * T + T;
    REAL *work = SUF(ml_gram_work)(&op, per_thread, nt);
    if (!work) return ML_ERR_ALLOC;
    ptrdiff_t t;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (t = 0; t < ntasks; t++) {
        if (ml_interrupted()) continue;
        REAL *buf = work + per_thread * ml_thread_id(), *buf2 = buf + T * T,
             *acc = buf2 + T * T;
        ptrdiff_t bi, bj;
        if (sym) { /* t-th tile of the upper triangle, row by row */
            ptrdiff_t r = t;
            bi = 0;
            while (r >= nbx - bi) {
                r -= nbx - bi;
                bi++;
            }
            bj = bi + r;
        } else {
            bi = t / nby;
            bj = t % nby;
        }
        ptrdiff_t i0 = bi * T, j0 = bj * T;
        ptrdiff_t ni = nx - i0 < T ? nx - i0 : T, nj = ny - j0 < T ? ny - j0 : T;
        SUF(ml_sqdist_tile)(&op, i0, ni, j0, nj, 1, scale, buf, T, buf, acc);
        SUF(ml_store_tile)(G, ny, i0, ni, j0, nj, buf, buf2, sym);
    }
    free(work);
    SUF(ml_sqdist_free)(&op);
    return ml_interrupted() ? ML_ERR_INTERRUPTED : ML_OK;
}

int SUF(ml_gram_matmat)(const REAL *X, ptrdiff_t nx, const REAL *Y,
                        ptrdiff_t ny, ptrdiff_t d, double sigma, const REAL *V,
                        ptrdiff_t k, REAL *out, GEMM_T gemm, int n_threads) {
    if (gemm == NULL || k < 0 || k > INT_MAX) return ML_ERR_ARG;
    SUF(ml_sqdist) op;
    REAL scale;
    int status = SUF(ml_gram_begin)(&op, &scale, X, &nx, Y, &ny, d, sigma, gemm);
    if (status != ML_OK) return status;
    for (ptrdiff_t i = 0; i < nx * k; i++) out[i] = 0;
    if (nx == 0 || ny == 0 || k == 0) {
        SUF(ml_sqdist_free)(&op);
        return ML_OK;
    }
    const ptrdiff_t T = ML_GRAM_TILE;
    const ptrdiff_t nbx = (nx + T - 1) / T, nby = (ny + T - 1) / T;
    const int nt = ml_threads(n_threads);
    REAL *buf = SUF(ml_gram_work)(&op, T * T + T, nt);
    if (!buf) return ML_ERR_ALLOC;
    ptrdiff_t bi;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (bi = 0; bi < nbx; bi++) {
        REAL *tile = buf + (T * T + T) * ml_thread_id(), *acc = tile + T * T;
        ptrdiff_t i0 = bi * T, ni = nx - i0 < T ? nx - i0 : T;
        for (ptrdiff_t bj = 0; bj < nby && !ml_interrupted(); bj++) {
            ptrdiff_t j0 = bj * T, nj = ny - j0 < T ? ny - j0 : T;
            SUF(ml_sqdist_tile)(&op, i0, ni, j0, nj, 1, scale, tile, T, tile, acc);
            /* out_blk (ni x k) += tile (ni x nj) V_blk (nj x k), column-major:
             * out^T (k x ni) += V_blk^T (k x nj) tile^T (nj x ni). */
            char ta = 'N', tb = 'N';
            int m = (int)k, n = (int)ni, kk = (int)nj, lda = (int)k, ldb = (int)T,
                ldc = (int)k;
            REAL one = 1;
            gemm(&ta, &tb, &m, &n, &kk, &one, (REAL *)V + j0 * k, &lda, tile,
                 &ldb, &one, out + i0 * k, &ldc);
        }
    }
    free(buf);
    SUF(ml_sqdist_free)(&op);
    return ml_interrupted() ? ML_ERR_INTERRUPTED : ML_OK;
}
