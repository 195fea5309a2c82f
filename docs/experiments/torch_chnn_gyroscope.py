"""An independent PyTorch CHNN for the gyroscope, to check physc's training against.

It follows the CHNN reference code's choices (mfinzi/constrained-hamiltonian-neural-networks,
biases/models/constrained_hnn.py and pl_trainer.py) in its own words: per-body log mass and
log total second moments (`d_moments`, 0.1 N(0, 1)), M and M^-1 in closed form, the rigid
DPhi of (Phi, PhiDot) with the PhiDot block through M^-1, z' = P J grad H; an MLP 12-256-
256-256-1 (tanh, orthogonal weights, torch's default biases); one random 5-point chunk per
training trajectory, RK4 (3/8) one step per interval, the L1 loss over every (x, v)
component, AdamW (3e-3, 1e-4), cosine annealing over the epochs, batch 200; evaluation by
dopri5 (scipy's RK45, rtol 1e-7, atol 1e-9, the whole test set as one system) from each
test trajectory's first state, the paper's time summary (trapz of log(Err + 1e-8) / T).

It trains on the data physc generated, so both see the same trajectories:

    build/physc run examples/gyroscope.phys --epochs 1 --save-data /tmp/gyro-data
    python3 docs/experiments/torch_chnn_gyroscope.py SEED EPOCHS /tmp/gyro-data

It also writes /tmp/gyro-data/all.csv (train, valid, test in one file) for physc runs on the
same data with other seeds: put `file "/tmp/gyro-data/all.csv"` in the example's data block
and run `physc run ... --seed S`.

Needs python3-torch and python3-scipy (Debian packages; not part of physc's build). About
1.0-1.2 s/epoch on one thread (TORCH_THREADS=1, the other core busy) on the machine
of docs/results.md, so the paper's 2000 epochs take 35-42 minutes. docs/results.md,
History (commits 33f7a32, 4f98016 and c5bfda3), has what it measured.
"""
import sys, time, math
import numpy as np
import torch
import scipy.integrate

torch.set_default_dtype(torch.float32)
torch.set_num_threads(int(__import__("os").environ.get("TORCH_THREADS", "2")))
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
data_dir = sys.argv[3] if len(sys.argv) > 3 else "/tmp/gyro-data"
torch.manual_seed(seed)
np.random.seed(seed)

def load(name):
    a = np.loadtxt(f"{data_dir}/{name}.csv", delimiter=",", skiprows=1)
    a = a[np.lexsort((a[:, 1], a[:, 0]))]
    n = int(a[:, 0].max()) + 1
    return a[:, 2:].reshape(n, -1, 2, 4, 3)  # (traj, t, x/v, point, xyz)

train, test = load("train"), load("test")

# the three sets in one CSV (trajectories renumbered), for physc's `data { file }`
with open(f"{data_dir}/all.csv", "w") as out:
    base = 0
    for name in ("train", "valid", "test"):
        lines = open(f"{data_dir}/{name}.csv").read().splitlines()
        if base == 0:
            out.write(lines[0] + "\n")
        n = 0
        for line in lines[1:]:
            traj, rest = line.split(",", 1)
            out.write(f"{int(traj) + base},{rest}\n")
            n = max(n, int(traj) + 1)
        base += n
dt = 0.02
C_J = -0.2217285  # the contact point: x0 + c (x3 - x0), c = attach_z
PAIRS = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]

class CHNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.d_moments = torch.nn.Parameter(0.1 * torch.randn(1, 4))
        layers = []
        chs = [12, 256, 256, 256]
        for i in range(3):
            lin = torch.nn.Linear(chs[i], chs[i + 1])
            torch.nn.init.orthogonal_(lin.weight)
            layers += [lin, torch.nn.Tanh()]
        last = torch.nn.Linear(256, 1)
        torch.nn.init.orthogonal_(last.weight)
        self.V = torch.nn.Sequential(*layers, last)

    def M(self, v):  # v (bs, 4, 3)
        mom = torch.exp(self.d_moments)[0]
        m, I = mom[0], mom[1:]
        p0 = (m + I.sum()) * v[:, 0] - (I[:, None] * v[:, 1:]).sum(1)
        pi = -I[:, None] * v[:, :1] + I[:, None] * v[:, 1:]
        return torch.cat([p0[:, None], pi], 1)

    def Minv(self, p):
        inv = torch.exp(-self.d_moments)[0]
        s = p.sum(1, keepdim=True) * inv[0]
        pad = torch.cat([torch.zeros(1), inv[1:]])
        return s + p * pad[None, :, None]

    def H(self, z):
        x, p = z[:, :12].reshape(-1, 4, 3), z[:, 12:].reshape(-1, 4, 3)
        return 0.5 * (p * self.Minv(p)).sum((1, 2)) + self.V(x.reshape(-1, 12))[:, 0]

    def DPsi(self, z):  # (bs, 24, 18): columns Phi (9) then PhiDot (9)
        bs = z.shape[0]
        x, p = z[:, :12].reshape(bs, 4, 3), z[:, 12:].reshape(bs, 4, 3)
        v = self.Minv(p)
        D = torch.zeros(bs, 2, 4, 3, 2, 9)
        for c, (i, j) in enumerate(PAIRS):
            e, u = x[:, i] - x[:, j], v[:, i] - v[:, j]
            D[:, 0, i, :, 0, c], D[:, 0, j, :, 0, c] = 2 * e, -2 * e
            D[:, 0, i, :, 1, c], D[:, 0, j, :, 1, c] = 2 * u, -2 * u
            D[:, 1, i, :, 1, c], D[:, 1, j, :, 1, c] = 2 * e, -2 * e
        coef = torch.tensor([1 - C_J, 0.0, 0.0, C_J])
        for k in range(3):
            D[:, 0, :, k, 0, 6 + k] = coef
            D[:, 1, :, k, 1, 6 + k] = coef
        # d/dv -> d/dp: the velocity block times Minv
        Dp = D[:, 1].permute(0, 3, 4, 1, 2).reshape(bs * 2 * 9, 4, 3)
        Dp = self.Minv(Dp).reshape(bs, 2, 9, 4, 3).permute(0, 3, 4, 1, 2)
        D = torch.stack([D[:, 0], Dp], 1)
        return D.reshape(bs, 24, 18)

    def field(self, z):
        with torch.enable_grad():
            if not z.requires_grad:
                z = z.requires_grad_(True)
            dH = torch.autograd.grad(self.H(z).sum(), z, create_graph=True)[0]
        Jv = lambda w: torch.cat([w[:, 12:], -w[:, :12]], 1)
        f = Jv(dH)
        D = self.DPsi(z)
        JD = torch.stack([Jv(D[:, :, c]) for c in range(18)], 2)
        lam = torch.linalg.solve(D.transpose(1, 2) @ JD, (D.transpose(1, 2) @ f[:, :, None]))
        return f - (JD @ lam)[:, :, 0]

    def to_state(self, xv):  # (bs, 2, 4, 3) -> (bs, 24)
        return torch.cat([xv[:, 0].reshape(-1, 12), self.M(xv[:, 1]).reshape(-1, 12)], 1)

    def to_xv(self, z):
        return torch.stack([z[:, :12].reshape(-1, 4, 3), self.Minv(z[:, 12:].reshape(-1, 4, 3))], 1)

def rk38(f, z, h):
    k1 = f(z)
    k2 = f(z + h * k1 / 3)
    k3 = f(z + h * (k2 - k1 / 3))
    k4 = f(z + h * (k1 - k2 + k3))
    return z + h * (k1 + 3 * (k2 + k3) + k4) / 8

# one random chunk of 5 points per training trajectory
nch = train.shape[1] // 5
idx = np.random.randint(0, nch, train.shape[0])
chunks = torch.tensor(np.stack([train[b, 5 * c:5 * c + 5] for b, c in enumerate(idx)]), dtype=torch.float32)

model = CHNN()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs, eta_min=0.0)
t0 = time.time()
for ep in range(epochs):
    perm = torch.randperm(chunks.shape[0])
    tot = 0
    for b0 in range(0, chunks.shape[0], 200):
        batch = chunks[perm[b0:b0 + 200]]
        z = model.to_state(batch[:, 0])
        preds = [batch[:, 0]]
        for k in range(4):
            z = rk38(model.field, z, dt)
            preds.append(model.to_xv(z))
        loss = (torch.stack(preds, 1) - batch).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
    sched.step()
    if ep % 50 == 0 or ep == epochs - 1:
        el = time.time() - t0
        print(f"epoch {ep + 1} loss {tot / 4:.3e} {el / (ep + 1):.3f} s/epoch", flush=True)

# evaluation: dopri5 (scipy RK45) on the whole test batch as one system, from t = 0
model = model.double()
torch.set_default_dtype(torch.float64)
xv0 = torch.tensor(test[:, 0])
z0 = model.to_state(xv0).detach().numpy()
nb = z0.shape[0]
def rhs(t, y):
    z = torch.tensor(y.reshape(nb, 24))
    return model.field(z).detach().numpy().reshape(-1)
ts = np.arange(test.shape[1]) * dt
sol = scipy.integrate.solve_ivp(rhs, (0, ts[-1]), z0.reshape(-1), method="RK45", t_eval=ts, rtol=1e-7, atol=1e-9)
zt = sol.y.T.reshape(len(ts), nb, 24)
pred = np.stack([model.to_xv(torch.tensor(zt[k])).detach().numpy() for k in range(len(ts))], 1)
true = test
d = np.sqrt(((pred - true) ** 2).sum((2, 3, 4)))
err = d / (np.sqrt((pred ** 2).sum((2, 3, 4))) + np.sqrt((true ** 2).sum((2, 3, 4))))
T = ts[-1]
per = np.exp(np.trapz(np.log(err + 1e-8), ts, axis=1) / T)
print(f"seed {seed}: test geometric mean rel error {np.exp(np.log(per).mean()):.4e}, train time {time.time() - t0:.0f} s")
print("learned exp(d_moments):", torch.exp(model.d_moments).detach().numpy())
