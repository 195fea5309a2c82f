#!/usr/bin/env python3
# pendulum_floor.py -- an experiment behind docs/results.md (commit 1df87a3), not part of physc:
# the chaos floor of the chain pendulums (the CHNN reference's sampling, masses and lengths)
# under three projections of a state onto the constraints, for sampling and for the floor:
#   mass  = X by Newton in the mass metric, then Xdot (physc's sampling)
#   eucl  = X by Euclidean Newton, then Xdot (physc's floor from commit ce98366 to 1df87a3)
#   joint = Gauss-Newton on (Phi, PhiDot) over (X, Xdot) jointly (the reference's project_onto_constraints)
# The dynamics are integrated in angle coordinates (scipy DOP853, rtol 1e-11) and compared in
# Cartesian (X, Xdot) as physc does. Needs python3-numpy and python3-scipy (apt).
# usage: pendulum_floor.py LINKS SAMPLING FLOOR [TRAJECTORIES] [SEED], e.g. 2 mass joint 100
import sys, numpy as np
from scipy.integrate import solve_ivp
SYS = {1: ([1.039051], [1.172151]), 2: ([1.172151, 1.039051], [1.035907, 1.082211]),
       3: ([1.082211, 1.172151, 1.039051], [1.116715, 0.938924, 1.035907])}
g = 9.81
nlinks = int(sys.argv[1]); samp = sys.argv[2]; flo = sys.argv[3]; ntraj = int(sys.argv[4]) if len(sys.argv) > 4 else 100
m, l = map(np.array, SYS[nlinks]); n = nlinks
rng = np.random.default_rng(int(sys.argv[5]) if len(sys.argv) > 5 else 0)

def phi(x, v):  # x, v: (n, 2)
    rel = np.diff(np.vstack([np.zeros(2), x]), axis=0); relv = np.diff(np.vstack([np.zeros(2), v]), axis=0)
    return np.concatenate([(rel**2).sum(1) - l**2, 2 * (rel * relv).sum(1)])

def jac(x, v):  # d(Phi, PhiDot)/d(x, v): (2n, 4n), x-block then v-block, flattened (n,2)
    rel = np.diff(np.vstack([np.zeros(2), x]), axis=0); relv = np.diff(np.vstack([np.zeros(2), v]), axis=0)
    J = np.zeros((2 * n, 4 * n))
    for c in range(n):
        for (node, sgn) in ((c, 1), (c - 1, -1)):
            if node < 0: continue
            J[c, 2 * node:2 * node + 2] += sgn * 2 * rel[c]
            J[n + c, 2 * node:2 * node + 2] += sgn * 2 * relv[c]
            J[n + c, 2 * n + 2 * node:2 * n + 2 * node + 2] += sgn * 2 * rel[c]
    return J

def project_joint(Z):  # Z: (B, 2, n, 2), the reference's joint Gauss-Newton with batch-RMS stop and clamp
    Z = Z.copy()
    for it in range(500):
        P = np.array([phi(z[0], z[1]) for z in Z])
        viol = np.sqrt((P**2).mean())
        if viol <= 1e-5 and it > 0: break
        scale = np.sqrt((Z**2).mean())
        for b in range(len(Z)):
            J = jac(Z[b, 0], Z[b, 1])
            d = J.T @ np.linalg.solve(J @ J.T, -P[b])
            Z[b] += np.clip(d.reshape(2, n, 2), -scale / 2, scale / 2)
        if viol <= 1e-5: break
    return Z

def project_seq(Z, metric):  # physc: Newton on positions (to 1e-12), then velocities; metric 'mass' or 'eucl'
    Z = Z.copy()
    Winv = np.repeat(1 / m, 2) if metric == 'mass' else np.ones(2 * n)
    for b in range(len(Z)):
        x, v = Z[b, 0].copy(), Z[b, 1].copy()
        for it in range(50):
            p = phi(x, v)[:n]
            if np.abs(p).max() <= 1e-12: break
            A = jac(x, v)[:n, :2 * n]
            W = A * Winv
            x = x - (W.T @ np.linalg.solve(A @ W.T, p)).reshape(n, 2)
        A = jac(x, v)[:n, :2 * n]; W = A * Winv
        pd = phi(x, v)[n:]
        v = v - (W.T @ np.linalg.solve(A @ W.T, pd)).reshape(n, 2)
        Z[b, 0], Z[b, 1] = x, v
    return Z

project = {'joint': project_joint, 'eucl': lambda Z: project_seq(Z, 'eucl'), 'mass': lambda Z: project_seq(Z, 'mass')}

def sample(B):
    th = rng.standard_normal((B, 2, n))
    Z = np.zeros((B, 2, n, 2))
    for b in range(B):
        px = py = vx = vy = 0.0
        for i in range(n):
            t, w = th[b, 0, i], th[b, 1, i]
            px += l[i] * np.sin(t); py += -l[i] * np.cos(t); vx += l[i] * np.cos(t) * w; vy += l[i] * np.sin(t) * w
            Z[b, 0, i] = (px, py); Z[b, 1, i] = (vx, vy)
    Z[:, 0] += 0.2 * rng.standard_normal((B, n, 2))
    Z[:, 1] = (0.5 * Z[:, 1] + 0.4 * rng.standard_normal((B, n, 2))) * 3
    return project[samp](Z)

def to_angles(z):
    rel = np.diff(np.vstack([np.zeros(2), z[0]]), axis=0); relv = np.diff(np.vstack([np.zeros(2), z[1]]), axis=0)
    th = np.arctan2(rel[:, 0], -rel[:, 1]); w = (rel[:, 0] * relv[:, 1] - rel[:, 1] * relv[:, 0]) / (rel**2).sum(1)
    return np.concatenate([th, w])

def to_cart(y):
    th, w = y[:n], y[n:]
    x = np.cumsum(np.stack([l * np.sin(th), -l * np.cos(th)], 1), 0)
    v = np.cumsum(np.stack([l * np.cos(th) * w, l * np.sin(th) * w], 1), 0)
    return np.stack([x, v])

msum = np.array([m[i:].sum() for i in range(n)])
def rhs(t, y):
    th, w = y[:n], y[n:]
    M = np.zeros((n, n)); f = np.zeros(n)
    for i in range(n):
        for j in range(n):
            mk = msum[max(i, j)]
            M[i, j] = mk * l[i] * l[j] * np.cos(th[i] - th[j])
            f[i] -= mk * l[i] * l[j] * np.sin(th[i] - th[j]) * w[j]**2
        f[i] -= g * l[i] * np.sin(th[i]) * msum[i]
    return np.concatenate([w, np.linalg.solve(M, f)])

ts = 0.03 * np.arange(101)
def roll(z):
    s = solve_ivp(rhs, (0, ts[-1]), to_angles(z), t_eval=ts, method='DOP853', rtol=1e-11, atol=1e-12)
    return np.array([to_cart(s.y[:, k]) for k in range(len(ts))])

Z0 = sample(ntraj)
Zp = project[flo](Z0 + 1e-4 * rng.standard_normal(Z0.shape))
logs = []
for b in range(ntraj):
    a, c = roll(Z0[b]), roll(Zp[b])
    e = np.sqrt(((a - c)**2).sum((1, 2, 3))) / (np.sqrt((a**2).sum((1, 2, 3))) + np.sqrt((c**2).sum((1, 2, 3))))
    le = np.log(e + 1e-8)
    logs.append(np.trapz(le, ts) / ts[-1])
logs = np.array(logs)
speed = np.sqrt((Z0[:, 1]**2).sum((1, 2))).mean()
print(f"{nlinks}-pendulum sampling {samp:5s} floor {flo:5s}: floor geo {np.exp(logs.mean()):.3e}  median {np.exp(np.median(logs)):.3e}  mean |v| {speed:.3f}")
