"""physc from Python: a trained model's shared library (physc emit-c --shared) through
its C ABI (runtime/abi/physc_model.h), and a run's folder as arrays. ctypes and NumPy
only: no compiled extension.

    import physc
    m = physc.load("libpendulum.so")            # or physc.load(lib, params="run/params.bin")
    m = physc.load_run("runs/pendulum1-chnn")   # or a run's folder: its library built on the way
    truth = m.true_trajectories(5)              # (5, steps + 1, W), as physc simulate
    pred = m.rollout(truth[:, :m.start_points]) # the model from the same states
    run = physc.read_run("runs/pendulum1-chnn") # metrics, trajectories, errors

States are rows of m.state_size numbers named m.state_names (positions, then velocities),
a batch an (n, W) array; arrays of float64 in C order are passed without a copy. Every
error of the library is a physc.Error with its code and message.
"""

import csv
import ctypes
import json
import os
import shutil
import subprocess
import warnings

import numpy as np

ABI_VERSION = 1  # runtime/abi/physc_model.h's PHYSC_MODEL_ABI_VERSION

OK, ERR_ARGUMENT, ERR_SIZE, ERR_FILE, ERR_UNSUPPORTED, ERR_FAILED, ERR_VERSION, ERR_MEMORY = range(8)
_CODE_NAMES = ["ok", "argument", "size", "file", "unsupported", "failed", "version", "memory"]


class Error(RuntimeError):
    """An error of the library: .code is one of the ERR_ constants."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.kind = _CODE_NAMES[code] if 0 <= code < len(_CODE_NAMES) else str(code)


_D = ctypes.POINTER(ctypes.c_double)
_ERR = ctypes.POINTER(ctypes.c_void_p)
_H = ctypes.c_void_p
_SIGNATURES = {
    "physc_abi_version": (ctypes.c_int, []),
    "physc_blas": (ctypes.c_char_p, []),
    "physc_blas_wanted_core": (ctypes.c_char_p, []),
    "physc_model_new": (ctypes.c_int, [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_H), _ERR]),
    "physc_model_free": (None, [_H]),
    "physc_free_error": (None, [ctypes.c_void_p]),
    "physc_model_name": (ctypes.c_char_p, [_H]),
    "physc_model_family": (ctypes.c_char_p, [_H]),
    "physc_model_system": (ctypes.c_char_p, [_H]),
    "physc_model_state_size": (ctypes.c_int, [_H]),
    "physc_model_positions": (ctypes.c_int, [_H]),
    "physc_model_state_name": (ctypes.c_char_p, [_H, ctypes.c_int]),
    "physc_model_constraint_count": (ctypes.c_int, [_H]),
    "physc_model_start_points": (ctypes.c_int, [_H]),
    "physc_model_param_count": (ctypes.c_long, [_H]),
    "physc_model_dt": (ctypes.c_double, [_H]),
    "physc_model_steps": (ctypes.c_int, [_H]),
    "physc_model_seed": (ctypes.c_ulong, [_H]),
    "physc_model_get_params": (ctypes.c_int, [_H, _D, ctypes.c_long, _ERR]),
    "physc_model_set_params": (ctypes.c_int, [_H, _D, ctypes.c_long, _ERR]),
    "physc_model_true_trajectories": (
        ctypes.c_int, [_H, ctypes.c_long, ctypes.c_ulong, ctypes.c_int, ctypes.c_double, _D, ctypes.c_long, _ERR]),
    "physc_model_true_field": (ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long, _ERR]),
    "physc_model_rollout": (
        ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, ctypes.c_int, ctypes.c_double, _D, ctypes.c_long, _ERR]),
    "physc_model_energy": (ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long, _ERR]),
    "physc_model_field": (ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long, _ERR]),
    "physc_model_step": (
        ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, ctypes.c_int, ctypes.c_double, _D, ctypes.c_long, _ERR]),
    "physc_model_field_vjp": (
        ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long,
                       _ERR]),
    "physc_model_step_vjp": (
        ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, ctypes.c_int, ctypes.c_double, _D, ctypes.c_long, _D,
                       ctypes.c_long, _D, ctypes.c_long, _ERR]),
    "physc_model_constraints": (
        ctypes.c_int, [_H, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long, _D, ctypes.c_long, _ERR]),
}


def _open_library(path):
    lib = ctypes.CDLL(os.path.abspath(path))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    version = lib.physc_abi_version()
    if version != ABI_VERSION:
        raise Error(ERR_VERSION, f"{path} implements the physc model ABI version {version}, and this client "
                                 f"(python/physc) version {ABI_VERSION}: use the client of the physc that built it")
    wanted = lib.physc_blas_wanted_core()
    if wanted:
        warnings.warn(f"OpenBLAS fell back to its generic kernels on this CPU, where physc runs the {wanted.decode()} "
                      f"ones: results differ from physc's by rounding; set OPENBLAS_CORETYPE={wanted.decode()} "
                      f"before Python starts for physc's own bits", stacklevel=3)
    return lib


def _ptr(a):
    return a.ctypes.data_as(_D) if a is not None else None


def _doubles(x, what):
    """x as float64 in C order: the same memory when it already is."""
    a = np.ascontiguousarray(x, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise Error(ERR_ARGUMENT, f"{what} holds a number that is not finite")
    return a


class Model:
    """A trained model in a library of physc emit-c --shared (see the module's doc)."""

    def __init__(self, library, params=None):
        self._lib = _open_library(library)
        self._h = _H()
        err = ctypes.c_void_p()
        path = os.fsencode(params) if params is not None else None
        self._check(self._lib.physc_model_new(ABI_VERSION, path, ctypes.byref(self._h), ctypes.byref(err)), err)
        lib, h = self._lib, self._h
        self.name = lib.physc_model_name(h).decode()
        self.family = lib.physc_model_family(h).decode()
        self.system = lib.physc_model_system(h).decode()
        self.state_size = lib.physc_model_state_size(h)
        self.positions = lib.physc_model_positions(h)
        self.constraint_count = lib.physc_model_constraint_count(h)
        self.start_points = lib.physc_model_start_points(h)
        self.param_count = lib.physc_model_param_count(h)
        self.dt = lib.physc_model_dt(h)
        self.steps = lib.physc_model_steps(h)
        self.seed = lib.physc_model_seed(h)
        self.state_names = [lib.physc_model_state_name(h, i).decode() for i in range(self.state_size)]
        self.blas = lib.physc_blas().decode()

    def _check(self, rc, err):
        if rc == OK:
            return
        message = ctypes.string_at(err.value).decode(errors="replace") if err.value else f"error {rc}"
        if err.value:
            self._lib.physc_free_error(err)
        raise Error(rc, message)

    def _call(self, fn, *args):
        err = ctypes.c_void_p()
        self._check(fn(self._h, *args, ctypes.byref(err)), err)

    def _states(self, x, what="x"):
        a = _doubles(x, what)
        if a.ndim == 1:
            a = a.reshape(1, -1)
        if a.ndim != 2:
            raise Error(ERR_SIZE, f"{what} has shape {x.shape}: a state (W,) or a batch (n, W), W = {self.state_size}")
        return a

    @property
    def params(self):
        """The model's parameters (a copy); assign an array of param_count numbers to set them."""
        out = np.empty(self.param_count)
        self._call(self._lib.physc_model_get_params, _ptr(out), out.size)
        return out

    @params.setter
    def params(self, theta):
        a = np.ascontiguousarray(theta, dtype=np.float64).ravel()
        self._call(self._lib.physc_model_set_params, _ptr(a), a.size)

    def true_trajectories(self, n, seed=None, steps=None, dt=None):
        """n true trajectories as physc simulate makes them (the data block's seed, steps and
        dt unless given): (n, steps + 1, W)."""
        seed = self.seed if seed is None else seed
        steps = self.steps if steps is None else steps
        dt = self.dt if dt is None else dt
        out = np.empty((n, steps + 1, self.state_size))
        self._call(self._lib.physc_model_true_trajectories, n, seed, steps, dt, _ptr(out), out.size)
        return out

    def true_field(self, x):
        """The true system's d state / dt at the states x ((n, W) or (W,)): the same shape."""
        a = self._states(x)
        out = np.empty_like(a)
        self._call(self._lib.physc_model_true_field, a.shape[0], _ptr(a), a.size, _ptr(out), out.size)
        return out.reshape(np.shape(x))

    def rollout(self, x0, steps=None, dt=None):
        """The model from each trajectory's first start_points states x0 ((n, start_points, W),
        or (n, W) for one), as physc simulate --params rolls it out: (n, steps + 1, W)."""
        steps = self.steps if steps is None else steps
        dt = self.dt if dt is None else dt
        a = _doubles(x0, "x0")
        if a.ndim == 2 and self.start_points == 1:
            a = a.reshape(a.shape[0], 1, a.shape[1])
        if a.ndim != 3:
            raise Error(ERR_SIZE, f"x0 has shape {np.shape(x0)}: (n, {self.start_points}, {self.state_size})")
        out = np.empty((a.shape[0], steps + 1, self.state_size))
        self._call(self._lib.physc_model_rollout, a.shape[0], _ptr(a), a.size, steps, dt, _ptr(out), out.size)
        return out

    def _starts(self, x, what="x"):
        """x as (n, start_points, W): (n, W) or (W,) for a model that starts from one state"""
        a = _doubles(x, what)
        if a.ndim == 1:
            a = a.reshape(1, -1)
        if a.ndim == 2 and self.start_points == 1:
            a = a.reshape(a.shape[0], 1, a.shape[1])
        if a.ndim != 3:
            raise Error(ERR_SIZE, f"{what} has shape {np.shape(x)}: (n, {self.start_points}, {self.state_size})")
        return a

    def field(self, x):
        """The model's vector field, d state / dt at the states x ((n, W) or (W,)): the same shape."""
        a = self._states(x)
        out = np.empty_like(a)
        self._call(self._lib.physc_model_field, a.shape[0], _ptr(a), a.size, _ptr(out), out.size)
        return out.reshape(np.shape(x))

    def step(self, x, steps=1, dt=None):
        """The model's own training step: the states after `steps` intervals of dt (default: the
        program's) from x ((n, W), or (n, start_points, W)): (n, W)."""
        dt = self.dt if dt is None else dt
        a = self._starts(x)
        out = np.empty((a.shape[0], self.state_size))
        self._call(self._lib.physc_model_step, a.shape[0], _ptr(a), a.size, steps, dt, _ptr(out), out.size)
        return out

    def field_vjp(self, x, cot, theta=False):
        """cot . d field / d x at the states x (x's shape); with theta=True also cot . d field /
        d theta (param_count numbers, summed over the batch): a pair."""
        a = self._states(x)
        c = _doubles(cot, "cot").reshape(a.shape)
        xa = np.empty_like(a)
        ta = np.empty(self.param_count) if theta else None
        self._call(self._lib.physc_model_field_vjp, a.shape[0], _ptr(a), a.size, _ptr(c), c.size, _ptr(xa), xa.size,
                   _ptr(ta), ta.size if theta else 0)
        xa = xa.reshape(np.shape(x))
        return (xa, ta) if theta else xa

    def step_vjp(self, x, cot, steps=1, dt=None, theta=False):
        """cot ((n, W)) . d step / d x (x's shape, as step takes it); with theta=True also the
        parameters' (summed over the batch): a pair."""
        dt = self.dt if dt is None else dt
        a = self._starts(x)
        c = _doubles(cot, "cot").reshape(a.shape[0], self.state_size)
        xa = np.empty_like(a)
        ta = np.empty(self.param_count) if theta else None
        self._call(self._lib.physc_model_step_vjp, a.shape[0], _ptr(a), a.size, steps, dt, _ptr(c), c.size, _ptr(xa),
                   xa.size, _ptr(ta), ta.size if theta else 0)
        xa = xa.reshape(np.shape(x))
        return (xa, ta) if theta else xa

    def energy(self, x):
        """The model's own energy (its learned H or E) of the states x: (n,) (a float for (W,))."""
        a = self._states(x)
        out = np.empty(a.shape[0])
        self._call(self._lib.physc_model_energy, a.shape[0], _ptr(a), a.size, _ptr(out), out.size)
        return out if np.ndim(x) == 2 else float(out[0])

    def constraints(self, x):
        """The system's constraints Phi and their time derivative at the states x: two (n, C) arrays."""
        a = self._states(x)
        phi = np.empty((a.shape[0], self.constraint_count))
        phidot = np.empty_like(phi)
        self._call(self._lib.physc_model_constraints, a.shape[0], _ptr(a), a.size, _ptr(phi), phi.size,
                   _ptr(phidot), phidot.size)
        return phi, phidot

    def close(self):
        if getattr(self, "_h", None) and self._h.value:
            self._lib.physc_model_free(self._h)
            self._h = _H()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return (f"<physc.Model {self.name} ({self.family}) of {self.system}: {self.state_size} state numbers, "
                f"{self.param_count} parameters>")


def load(library, params=None):
    """The model of a physc emit-c --shared library, with its built-in parameters or a params.bin's."""
    return Model(library, params)


def _find_physc(physc):
    """The physc to build with: the argument, $PHYSC, physc on PATH, or this checkout's build/physc."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "physc")
    for candidate in (physc, os.environ.get("PHYSC"), shutil.which("physc"), here):
        if candidate and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate) if os.path.exists(candidate) else candidate
    raise Error(ERR_FILE, "no physc to build the model's library with: pass physc=PATH or set PHYSC")


def load_run(folder, physc=None, params=None):
    """The model a `physc run` trained, from its folder: its library (lib<model>.so in the
    folder, built by `physc emit-c --shared` from the program, --set values and prediction
    precision metrics.json names, and built again when params.bin is newer), with the run's
    params.bin."""
    with open(os.path.join(folder, "metrics.json")) as f:
        metrics = json.load(f)
    program, model = metrics.get("program"), metrics["model"]
    if not program or not os.path.exists(program):
        raise Error(ERR_FILE, f"{folder}: the run's program ({program or 'not recorded'}) is not there: build its library "
                              f"with physc emit-c --shared and use physc.load")
    params = params or os.path.join(folder, "params.bin")
    lib = os.path.join(folder, f"lib{model}.so")
    if not os.path.exists(lib) or os.path.getmtime(lib) < os.path.getmtime(params):
        cmd = [_find_physc(physc), "emit-c", "-q", "--shared", "--model", model, "--params", params, "-o", lib, program]
        if "predicts_in" in metrics:  # (an f32 dtlnn predicts in float, as its run did)
            cmd[2:2] = ["--precision", metrics["predicts_in"]]
        for name, value in metrics.get("set", {}).items():
            cmd[2:2] = ["--set", f"{name}={value!r}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise Error(ERR_FILE, f"building {lib} failed: {r.stderr.strip()}")
    return Model(lib, params)


def _read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    data = np.array([[float(v) for v in r] for r in body]) if body else np.empty((0, len(header)))
    return {name: data[:, i] for i, name in enumerate(header)}


def read_run(folder):
    """A physc run's folder as a dict: 'metrics' (metrics.json), and 'trajectories' (a row per
    test trajectory), 'errors' (per trajectory and time) and 'first_rollout' as dicts of
    column name -> array, each where the run wrote it."""
    run = {}
    with open(os.path.join(folder, "metrics.json")) as f:
        run["metrics"] = json.load(f)
    for key, name in (("trajectories", "trajectories.csv"), ("errors", "errors.csv"),
                      ("first_rollout", "first-rollout.csv")):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            run[key] = _read_csv(path)
    return run
