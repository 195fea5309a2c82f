/* handwritten_state.h — the per-state math of handwritten.c, included twice by it: with
   REAL = double (one state) and with REAL = a GCC vector of doubles (one state per lane).
   SFX(name) names the instance. Component i of the state(s) at b of the SoA batch is read
   with LD(i) from z = (X, P) and written with ST(i, value) to zdot = (Xdot, Pdot).
   The derivations are in handwritten.c. */

/* ---- 3-pendulum ---- */
static inline __attribute__((always_inline)) void SFX(pend3_state)(const Pend3 *k, const double *restrict z, double *restrict zdot, long n, long b) {
    const REAL x0 = LD(0), y0 = LD(1), x1 = LD(2), y1 = LD(3), x2 = LD(4), y2 = LD(5);
    const REAL vx0 = LD(6) * k->i0, vy0 = LD(7) * k->i0, vx1 = LD(8) * k->i1, vy1 = LD(9) * k->i1,
               vx2 = LD(10) * k->i2, vy2 = LD(11) * k->i2;
    /* relative positions and velocities of the three rows */
    const REAL ex0 = x0, ey0 = y0, ex1 = x0 - x1, ey1 = y0 - y1, ex2 = x1 - x2, ey2 = y1 - y2;
    const REAL ux0 = vx0, uy0 = vy0, ux1 = vx0 - vx1, uy1 = vy0 - vy1, ux2 = vx1 - vx2, uy2 = vy1 - vy2;
    const REAL e00 = ex0 * ex0 + ey0 * ey0, e11 = ex1 * ex1 + ey1 * ey1, e22 = ex2 * ex2 + ey2 * ey2;
    const REAL e01 = ex0 * ex1 + ey0 * ey1, e12 = ex1 * ex2 + ey1 * ey2;
    /* G (tridiagonal) = L D L^T */
    const REAL G00 = k->P00 * e00, G11 = k->P11 * e11, G22 = k->P22 * e22, G01 = k->P01 * e01, G12 = k->P12 * e12;
    const REAL r0 = 1.0 / G00, l1 = G01 * r0, d1 = G11 - l1 * G01, r1 = 1.0 / d1, l2 = G12 * r1,
               r2 = 1.0 / (G22 - l2 * G12);
    /* mu2 = G^-1 A v, (A v)_r = 2 e_r . u_r */
    REAL a0 = 2.0 * (ex0 * ux0 + ey0 * uy0), a1 = 2.0 * (ex1 * ux1 + ey1 * uy1), a2 = 2.0 * (ex2 * ux2 + ey2 * uy2);
    a1 -= l1 * a0, a2 -= l2 * a1;
    const REAL mu22 = a2 * r2, mu21 = a1 * r1 - l2 * mu22, mu20 = a0 * r0 - l1 * mu21;
    /* mu1 = G^-1 (S mu2 - B v + A M^-1 dV): (B v)_r = 2 |u_r|^2; gravity accelerates every
       bob by the same g, so A M^-1 dV is 2 g e_0y on the tether and 0 on the links */
    const REAL S01 = k->P01 * ((ux0 * ex1 + uy0 * ey1) - (ex0 * ux1 + ey0 * uy1));
    const REAL S12 = k->P12 * ((ux1 * ex2 + uy1 * ey2) - (ex1 * ux2 + ey1 * uy2));
    REAL c0 = S01 * mu21 - 2.0 * (ux0 * ux0 + uy0 * uy0) + 2.0 * GRAV * ey0;
    REAL c1 = S12 * mu22 - S01 * mu20 - 2.0 * (ux1 * ux1 + uy1 * uy1);
    REAL c2 = -S12 * mu21 - 2.0 * (ux2 * ux2 + uy2 * uy2);
    c1 -= l1 * c0, c2 -= l2 * c1;
    const REAL mu12 = c2 * r2, mu11 = c1 * r1 - l2 * mu12, mu10 = c0 * r0 - l1 * mu11;
    /* Xdot = v - M^-1 A^T mu2, Pdot = -dV + A^T mu1 + B^T mu2, row by row:
       f_r = 2 e_r mu2_r, F_r = 2 (e_r mu1_r + u_r mu2_r), + at a row's first point, - at its second */
    const REAL fx0 = 2.0 * ex0 * mu20, fy0 = 2.0 * ey0 * mu20, fx1 = 2.0 * ex1 * mu21, fy1 = 2.0 * ey1 * mu21,
               fx2 = 2.0 * ex2 * mu22, fy2 = 2.0 * ey2 * mu22;
    const REAL Fx0 = 2.0 * (ex0 * mu10 + ux0 * mu20), Fy0 = 2.0 * (ey0 * mu10 + uy0 * mu20);
    const REAL Fx1 = 2.0 * (ex1 * mu11 + ux1 * mu21), Fy1 = 2.0 * (ey1 * mu11 + uy1 * mu21);
    const REAL Fx2 = 2.0 * (ex2 * mu12 + ux2 * mu22), Fy2 = 2.0 * (ey2 * mu12 + uy2 * mu22);
    ST(0, vx0 - k->i0 * (fx0 + fx1));
    ST(1, vy0 - k->i0 * (fy0 + fy1));
    ST(2, vx1 - k->i1 * (fx2 - fx1));
    ST(3, vy1 - k->i1 * (fy2 - fy1));
    ST(4, vx2 + k->i2 * fx2);
    ST(5, vy2 + k->i2 * fy2);
    ST(6, Fx0 + Fx1);
    ST(7, Fy0 + Fy1 - k->mg0);
    ST(8, Fx2 - Fx1);
    ST(9, Fy2 - Fy1 - k->mg1);
    ST(10, -Fx2);
    ST(11, -Fy2 - k->mg2);
}

/* ---- gyroscope ---- */
static inline __attribute__((always_inline)) REAL SFX(dot3)(const REAL *a, const REAL *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

typedef struct SFX(GyroFactor) {
    REAL d[6], l30, l40, l31, l51, l42, l52, l43, l53, l54; /* d: reciprocals of D */
    REAL e2[3], e4[3], e5[3];                               /* rows through x3 */
} SFX(GyroFactor);

/* Solves G x = b (rigid rows 0..5, then the joint rows 6..8) in place. */
static inline __attribute__((always_inline)) void SFX(gyro_solve)(const Gyro *k, const SFX(GyroFactor) *f, REAL *x) {
    REAL *J = x + 6;
    /* eliminate the joint block: b_R -= G_RJ b_J / gj */
    x[2] -= k->h_igj * SFX(dot3)(f->e2, J);
    x[4] -= k->h_igj * SFX(dot3)(f->e4, J);
    x[5] -= k->h_igj * SFX(dot3)(f->e5, J);
    /* L D L^T on the 6 x 6 Schur complement */
    x[3] -= f->l30 * x[0] + f->l31 * x[1];
    x[4] -= f->l40 * x[0] + f->l42 * x[2] + f->l43 * x[3];
    x[5] -= f->l51 * x[1] + f->l52 * x[2] + f->l53 * x[3] + f->l54 * x[4];
    for (int i = 0; i < 6; i++) x[i] *= f->d[i];
    x[4] -= f->l54 * x[5];
    x[3] -= f->l43 * x[4] + f->l53 * x[5];
    x[2] -= f->l42 * x[4] + f->l52 * x[5];
    x[1] -= f->l31 * x[3] + f->l51 * x[5];
    x[0] -= f->l30 * x[3] + f->l40 * x[4];
    /* back to the joint rows: x_J = (b_J - G_JR x_R) / gj */
    for (int c = 0; c < 3; c++) J[c] = (J[c] - k->h * (f->e2[c] * x[2] + f->e4[c] * x[4] + f->e5[c] * x[5])) * k->igj;
}

static inline __attribute__((always_inline)) void SFX(gyro_state)(const Gyro *k, const double *restrict z, double *restrict zdot, long n, long b) {
    static const int pi[6] = {0, 0, 0, 1, 1, 2}, pj[6] = {1, 2, 3, 2, 3, 3};
    const double c = k->c, im = k->im, *il = k->il;
    REAL x[4][3], v[4][3];
    for (int a = 0; a < 4; a++)
        for (int q = 0; q < 3; q++) x[a][q] = LD(a * 3 + q);
    for (int q = 0; q < 3; q++) {
        const REAL p0 = LD(12 + q), p1 = LD(15 + q), p2 = LD(18 + q), p3 = LD(21 + q);
        const REAL v0 = (p0 + p1 + p2 + p3) * im;
        v[0][q] = v0, v[1][q] = v0 + p1 * il[1], v[2][q] = v0 + p2 * il[2], v[3][q] = v0 + p3 * il[3];
    }
    REAL e[6][3], u[6][3];
    for (int r = 0; r < 6; r++)
        for (int q = 0; q < 3; q++) e[r][q] = x[pi[r]][q] - x[pj[r]][q], u[r][q] = v[pi[r]][q] - v[pj[r]][q];
    /* G's rigid block, then its Schur complement after the joint block */
    REAL K[6], K03 = k->P03 * SFX(dot3)(e[0], e[3]), K04 = k->P04 * SFX(dot3)(e[0], e[4]),
               K13 = k->P13 * SFX(dot3)(e[1], e[3]), K15 = k->P15 * SFX(dot3)(e[1], e[5]),
               K24 = k->P24 * SFX(dot3)(e[2], e[4]), K25 = k->P25 * SFX(dot3)(e[2], e[5]),
               K34 = k->P34 * SFX(dot3)(e[3], e[4]), K35 = k->P35 * SFX(dot3)(e[3], e[5]),
               K45 = k->P45 * SFX(dot3)(e[4], e[5]);
    for (int r = 0; r < 6; r++) K[r] = k->Pd[r] * SFX(dot3)(e[r], e[r]);
    K[2] -= k->hh * SFX(dot3)(e[2], e[2]), K[4] -= k->hh * SFX(dot3)(e[4], e[4]), K[5] -= k->hh * SFX(dot3)(e[5], e[5]);
    K24 -= k->hh * SFX(dot3)(e[2], e[4]), K25 -= k->hh * SFX(dot3)(e[2], e[5]), K45 -= k->hh * SFX(dot3)(e[4], e[5]);
    SFX(GyroFactor) f;
    for (int q = 0; q < 3; q++) f.e2[q] = e[2][q], f.e4[q] = e[4][q], f.e5[q] = e[5][q];
    /* L D L^T, order 0..5: rows 0, 1, 2 only touch 3, 4, 5 */
    f.d[0] = 1.0 / K[0], f.d[1] = 1.0 / K[1], f.d[2] = 1.0 / K[2];
    f.l30 = K03 * f.d[0], f.l40 = K04 * f.d[0], f.l31 = K13 * f.d[1], f.l51 = K15 * f.d[1];
    f.l42 = K24 * f.d[2], f.l52 = K25 * f.d[2];
    const REAL k33 = K[3] - f.l30 * K03 - f.l31 * K13, k34 = K34 - f.l30 * K04, k35 = K35 - f.l31 * K15;
    const REAL k44 = K[4] - f.l40 * K04 - f.l42 * K24, k45 = K45 - f.l42 * K25;
    const REAL k55 = K[5] - f.l51 * K15 - f.l52 * K25;
    f.d[3] = 1.0 / k33, f.l43 = k34 * f.d[3], f.l53 = k35 * f.d[3];
    const REAL k44b = k44 - f.l43 * k34, k45b = k45 - f.l43 * k35, k55b = k55 - f.l53 * k35;
    f.d[4] = 1.0 / k44b, f.l54 = k45b * f.d[4];
    f.d[5] = 1.0 / (k55b - f.l54 * k45b);
    /* mu2 = G^-1 A v: (A v)_r = 2 e_r . u_r; joint: (1 - c) v0 + c v3 */
    REAL mu2[9], mu1[9];
    for (int r = 0; r < 6; r++) mu2[r] = 2.0 * SFX(dot3)(e[r], u[r]);
    for (int q = 0; q < 3; q++) mu2[6 + q] = (1 - c) * v[0][q] + c * v[3][q];
    SFX(gyro_solve)(k, &f, mu2);
    /* mu1 = G^-1 (S mu2 - B v + A M^-1 dV): (B v)_r = 2 |u_r|^2 (0 on the joint);
       A M^-1 dV is g on the joint's z row (M^-1 dV = g at every point) */
    const REAL q03 = k->P03 * (SFX(dot3)(u[0], e[3]) - SFX(dot3)(e[0], u[3])),
               q04 = k->P04 * (SFX(dot3)(u[0], e[4]) - SFX(dot3)(e[0], u[4])),
               q13 = k->P13 * (SFX(dot3)(u[1], e[3]) - SFX(dot3)(e[1], u[3])),
               q15 = k->P15 * (SFX(dot3)(u[1], e[5]) - SFX(dot3)(e[1], u[5])),
               q24 = k->P24 * (SFX(dot3)(u[2], e[4]) - SFX(dot3)(e[2], u[4])),
               q25 = k->P25 * (SFX(dot3)(u[2], e[5]) - SFX(dot3)(e[2], u[5])),
               q34 = k->P34 * (SFX(dot3)(u[3], e[4]) - SFX(dot3)(e[3], u[4])),
               q35 = k->P35 * (SFX(dot3)(u[3], e[5]) - SFX(dot3)(e[3], u[5])),
               q45 = k->P45 * (SFX(dot3)(u[4], e[5]) - SFX(dot3)(e[4], u[5]));
    const REAL *m2J = mu2 + 6;
    mu1[0] = q03 * mu2[3] + q04 * mu2[4];
    mu1[1] = q13 * mu2[3] + q15 * mu2[5];
    mu1[2] = q24 * mu2[4] + q25 * mu2[5] + k->h * SFX(dot3)(u[2], m2J);
    mu1[3] = -q03 * mu2[0] - q13 * mu2[1] + q34 * mu2[4] + q35 * mu2[5];
    mu1[4] = -q04 * mu2[0] - q24 * mu2[2] - q34 * mu2[3] + q45 * mu2[5] + k->h * SFX(dot3)(u[4], m2J);
    mu1[5] = -q15 * mu2[1] - q25 * mu2[2] - q35 * mu2[3] - q45 * mu2[4] + k->h * SFX(dot3)(u[5], m2J);
    for (int r = 0; r < 6; r++) mu1[r] -= 2.0 * SFX(dot3)(u[r], u[r]);
    for (int q = 0; q < 3; q++) mu1[6 + q] = -k->h * (u[2][q] * mu2[2] + u[4][q] * mu2[4] + u[5][q] * mu2[5]);
    mu1[8] += k->g_joint;
    SFX(gyro_solve)(k, &f, mu1);
    /* Xdot = v - M^-1 A^T mu2, Pdot = -dV + A^T mu1 + B^T mu2, per rigid row
       f_r = 2 e_r mu2_r and F_r = 2 (e_r mu1_r + u_r mu2_r), + at its first point, - at its second */
    REAL fr[6][3], Fr[6][3];
    for (int r = 0; r < 6; r++)
        for (int q = 0; q < 3; q++) {
            fr[r][q] = 2.0 * e[r][q] * mu2[r];
            Fr[r][q] = 2.0 * (e[r][q] * mu1[r] + u[r][q] * mu2[r]);
        }
    for (int q = 0; q < 3; q++) {
        const REAL f1 = -fr[0][q] + fr[3][q] + fr[4][q], f2 = -fr[1][q] - fr[3][q] + fr[5][q],
                   f3 = -fr[2][q] - fr[4][q] - fr[5][q];
        ST(0 + q, v[0][q] - im * m2J[q]);
        ST(3 + q, v[1][q] - il[1] * f1 - im * m2J[q]);
        ST(6 + q, v[2][q] - il[2] * f2 - im * m2J[q]);
        ST(9 + q, v[3][q] - il[3] * f3 - k->w3 * m2J[q]);
        const REAL F0 = Fr[0][q] + Fr[1][q] + Fr[2][q], F1 = -Fr[0][q] + Fr[3][q] + Fr[4][q],
                   F2 = -Fr[1][q] - Fr[3][q] + Fr[5][q], F3 = -Fr[2][q] - Fr[4][q] - Fr[5][q];
        ST(12 + q, F0 + (1 - c) * mu1[6 + q] - (q == 2 ? k->mg : 0.0));
        ST(15 + q, F1);
        ST(18 + q, F2);
        ST(21 + q, F3 + c * mu1[6 + q]);
    }
}
