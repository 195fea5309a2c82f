"""test_abi.py LIB RUN_DIR TRUTH_CSV MODEL_CSV STEPS [bits]: a library of `physc emit-c --shared`
from Python (python/physc), against what physc wrote for the same program:
- the true trajectories equal `physc simulate`'s CSV, and the model's rollout from their
  first states `physc simulate --params`'s, bit for bit with `bits` (the process runs the
  OpenBLAS kernels physc runs), else to 1e-12;
- the true field, integrated by SciPy's solve_ivp, follows the true trajectories;
- the model's energy (where its family has one) and the constraints at the true states;
- the errors: wrong sizes, a missing or foreign params file, another ABI version, what
  the family lacks;
- two handles in two threads give what one gives.
Run by Debian's /usr/bin/python3 (python3-numpy, python3-scipy)."""

import ctypes
import os
import sys
import threading

import numpy as np
from scipy.integrate import solve_ivp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import physc  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


def read_csv(path, n, steps, w):
    rows = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    out = np.full((n, steps + 1, w), np.nan)
    times = sorted(set(rows[:, 1]))
    for r in rows:
        out[int(r[0]), times.index(r[1])] = r[2:]
    return out


def expect_error(code, fn, what):
    try:
        fn()
    except physc.Error as e:
        check(e.code == code and str(e), f"{what}: {e.kind} error ({e})")
        return
    check(False, f"{what}: no error")


# the families whose field and step the library differentiates (model.h: tape_field, tape_step)
FIELDS = {"chnn", "clnn", "csonode", "node", "hnn", "lnn", "delan", "sonode", "liet2"}
STEPS = FIELDS | {"dtlnn"}


def central_difference(fn, x, cot, h=1e-6):
    """cot . d fn / d x, entry by entry"""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = np.sum(cot * (fn(x + e) - fn(x - e))) / (2 * h)
    return g


def theta_difference(m, fn, cot, u, h=1e-6):
    """cot . d fn / d theta in the direction u"""
    theta = m.params
    m.params = theta + h * u
    plus = fn()
    m.params = theta - h * u
    minus = fn()
    m.params = theta
    return np.sum(cot * (plus - minus)) / (2 * h)


def check_derivatives(m, label, truth):
    rng = np.random.default_rng(1)
    x = truth[:3, 0].copy()  # three states on the true trajectories
    xs = truth[:3, :m.start_points].copy()
    cot = rng.normal(size=x.shape)
    for what, has, fn, vjp, at in (
            ("field", m.family in FIELDS, lambda z: m.field(z), lambda z, c: m.field_vjp(z, c, theta=True), x),
            ("step", m.family in STEPS, lambda z: m.step(z, steps=3),
             lambda z, c: m.step_vjp(z, c, steps=3, theta=True), xs)):
        if not has:
            expect_error(physc.ERR_UNSUPPORTED, lambda: fn(at), f"{label}: its {what}")
            continue
        out = fn(at)
        check(out.shape == x.shape and np.all(np.isfinite(out)), f"{label}: {what} of 3 states")
        xa, ta = vjp(at, cot)
        fd = central_difference(fn, at, cot)
        err = np.abs(xa - fd).max() / max(1.0, np.abs(fd).max())
        check(err < 1e-6, f"{label}: {what} VJP in x = central differences ({err:.1e})")
        worst = 0.0
        for _ in range(3):
            u = rng.normal(size=m.param_count)
            want = theta_difference(m, lambda: fn(at), cot, u)
            worst = max(worst, abs(ta @ u - want) / max(1.0, abs(want)))
        check(worst < 1e-6, f"{label}: {what} VJP in theta = central differences along 3 directions ({worst:.1e})")
    if m.family in FIELDS:  # the field is its own step's rate: (step over h - x) / h -> field as h -> 0
        h = 1e-5 * m.dt
        rate = (m.step(x, steps=1, dt=h) - x) / h
        f = m.field(x)
        err = np.abs(rate - f).max() / np.abs(f).max()
        check(err < 1e-3, f"{label}: the field = the rate of its own step over dt/1e5 ({err:.1e})")
    if m.family in ("liet2", "dtlnn"):  # they roll out by their step
        a, b = m.step(xs, steps=3), m.rollout(xs, steps=3)[:, 3]
        err = np.abs(a - b).max() / np.abs(b).max()
        check(err < 1e-13, f"{label}: 3 steps = the rollout's 4th point ({err:.1e})")
    if m.family in FIELDS - {"node", "liet2"}:  # second order: the positions' rate is the velocity (a NODE learns it)
        f = m.field(x)
        err = np.abs(f[:, :m.positions] - x[:, m.positions:]).max() / np.abs(x).max()
        check(err < 1e-14, f"{label}: the field's dX/dt = Xdot ({err:.1e})")


def main():
    lib, run, truth_csv, model_csv, steps = sys.argv[1:6]
    steps, bits = int(steps), len(sys.argv) > 6 and sys.argv[6] == "bits"
    m = physc.load(lib)
    n, w = 5, m.state_size
    label = f"{m.name} ({m.family}) of {m.system}"
    check(len(m.state_names) == w and m.param_count > 0, f"{label}: {w} state numbers named, {m.param_count} parameters")

    truth = m.true_trajectories(n, steps=steps)
    want = read_csv(truth_csv, n, steps, w)
    check(np.array_equal(truth, want), f"{label}: true trajectories = physc simulate's, bit for bit")

    pred = m.rollout(truth[:, :m.start_points], steps=steps)
    jit = read_csv(model_csv, n, steps, w)
    diff = np.abs(pred - jit).max()
    if bits:
        check(np.array_equal(pred, jit), f"{label}: rollout = physc simulate --params's, bit for bit")
    else:
        check(diff <= 1e-12 * max(1.0, np.abs(jit).max()), f"{label}: rollout = physc simulate --params's to {diff:.1e}")

    # the true field, integrated by another integrator, follows the truth
    dt = m.dt
    times = np.arange(steps + 1) * dt
    worst = 0.0
    for b in range(2):
        sol = solve_ivp(lambda t, z: m.true_field(z), (0, times[-1]), truth[b, 0], t_eval=times, rtol=1e-10,
                        atol=1e-12, method="DOP853")
        scale = np.abs(truth[b]).max()
        worst = max(worst, np.abs(sol.y.T - truth[b]).max() / scale)
    check(worst < 1e-5, f"{label}: solve_ivp on the true field follows the true trajectories ({worst:.1e})")

    x = truth[:, 0].copy()
    if m.family in ("node", "sonode", "csonode"):
        expect_error(physc.ERR_UNSUPPORTED, lambda: m.energy(x), f"{label}: energy")
    else:
        e = m.energy(truth.reshape(-1, w)).reshape(n, steps + 1)
        check(np.all(np.isfinite(e)), f"{label}: energy of {e.size} states finite")
    if m.constraint_count > 0:
        phi, phidot = m.constraints(x)
        check(np.abs(phi).max() < 1e-7 and np.abs(phidot).max() < 1e-6,
              f"{label}: Phi {np.abs(phi).max():.1e} and its rate {np.abs(phidot).max():.1e} at the true states")

    check_derivatives(m, label, truth)

    # errors: sizes (through the C calls, where a buffer's length is given), files, versions
    out = np.empty(n * w - 1)
    err = ctypes.c_void_p()
    rc = m._lib.physc_model_true_field(m._h, n, physc._ptr(x), x.size, physc._ptr(out), out.size, ctypes.byref(err))
    message = ctypes.string_at(err.value).decode() if err.value else ""
    m._lib.physc_free_error(err)
    check(rc == physc.ERR_SIZE and "holds" in message, f"{label}: an output one short: size error ({message})")
    # hostile calls in C: a NULL handle, n = 0, a batch too large to address, NULL buffers
    lib_ = m._lib
    one = np.zeros(w)
    for what, rc_want, call in (
            ("a NULL handle", physc.ERR_ARGUMENT,
             lambda e: lib_.physc_model_energy(None, 1, physc._ptr(one), w, physc._ptr(one), 1, e)),
            ("n = 0", physc.ERR_ARGUMENT,
             lambda e: lib_.physc_model_true_field(m._h, 0, physc._ptr(one), w, physc._ptr(one), w, e)),
            ("n = 2^62", physc.ERR_SIZE,
             lambda e: lib_.physc_model_true_field(m._h, 1 << 62, physc._ptr(one), w, physc._ptr(one), w, e)),
            ("a NULL output", physc.ERR_ARGUMENT,
             lambda e: lib_.physc_model_rollout(m._h, 1, physc._ptr(one), w * m.start_points, 3, m.dt, None, 4 * w, e)),
            ("steps = -1", physc.ERR_ARGUMENT,
             lambda e: lib_.physc_model_step(m._h, 1, physc._ptr(one), w * m.start_points, -1, m.dt, physc._ptr(one), w, e))):
        err = ctypes.c_void_p()
        rc = call(ctypes.byref(err))
        message = ctypes.string_at(err.value).decode() if err.value else ""
        lib_.physc_free_error(err)
        check(rc == rc_want and message, f"{label}: {what}: {physc._CODE_NAMES[rc_want]} error ({message})")
    expect_error(physc.ERR_SIZE, lambda: m.rollout(np.zeros((n, m.start_points, w + 1)), steps=3),
                 f"{label}: states of W + 1 numbers")
    expect_error(physc.ERR_ARGUMENT, lambda: m.rollout(truth[:, :m.start_points], steps=3, dt=-1.0), f"{label}: dt < 0")
    expect_error(physc.ERR_FILE, lambda: physc.load(lib, params=os.path.join(run, "no-such-params.bin")),
                 f"{label}: a missing params file")
    with open(os.path.join(run, "foreign.bin"), "wb") as f:
        f.write(b"not a params file")
    expect_error(physc.ERR_FILE, lambda: physc.load(lib, params=os.path.join(run, "foreign.bin")),
                 f"{label}: a file that is no params.bin")
    again = physc.load(lib, params=os.path.join(run, "params.bin"))
    check(np.array_equal(again.rollout(truth[:, :m.start_points], steps=steps), pred),
          f"{label}: the run's params.bin = the parameters built in")
    h = ctypes.c_void_p()
    rc = m._lib.physc_model_new(physc.ABI_VERSION + 1, None, ctypes.byref(h), ctypes.byref(err))
    message = ctypes.string_at(err.value).decode() if err.value else ""
    m._lib.physc_free_error(err)
    check(rc == physc.ERR_VERSION and not h.value and "version" in message,
          f"{label}: another ABI version refused ({message})")

    # two handles, two threads: what one gives
    results = [None, None]

    def work(i):
        with physc.load(lib) as mi:
            results[i] = mi.rollout(truth[:, :mi.start_points], steps=steps)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(all(r is not None and np.array_equal(r, pred) for r in results), f"{label}: two handles in two threads")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
