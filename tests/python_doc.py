"""tests/python_doc.py PAGE BUILD: runs docs/python.md as a reader would, in a fresh folder with
`build`, `examples`, `python` and `runtime` linked to the checkout's: each ```sh block with
bash -e, each ```python block with this interpreter (Debian's, with NumPy and SciPy), and
each ```c block as the body of a main() (its #include lines above it), built against the
library the page made (lib*.so) and run. Prints the first failure and exits 1, or exits 0."""
import glob
import os
import re
import subprocess
import sys
import tempfile

page, build = sys.argv[1], os.path.abspath(sys.argv[2])
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
blocks = re.findall(r"^```([a-z]*)([^\n]*)\n(.*?)^```", open(page).read(), re.M | re.S)
work = tempfile.mkdtemp(prefix="physc-python-doc-")
os.symlink(build, os.path.join(work, "build"))
for name in ("examples", "python", "runtime", "stdlib"):
    os.symlink(os.path.join(root, name), os.path.join(work, name))
counts = {}


def run(cmd, what, body):
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"python.md: a {what} block failed (exit {r.returncode}):\n{body}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout


for lang, info, body in blocks:
    counts[lang] = counts.get(lang, 0) + 1
    if lang == "sh":
        run(["bash", "-e", "-o", "pipefail", "-c", body], "sh", body)
    elif lang == "python":
        out = run([sys.executable, "-c", body], "python", body)
        print(out, end="")
    elif lang == "c":
        libs = glob.glob(os.path.join(work, "lib*.so"))
        if len(libs) != 1:
            sys.exit(f"python.md: a C block needs the one library the page built, and there are {libs}")
        name = os.path.basename(libs[0])[3:-3]
        head = [l for l in body.splitlines() if l.startswith("#include")]
        rest = [l for l in body.splitlines() if not l.startswith("#include")]
        src = "#include <stdio.h>\n" + "\n".join(head) + "\nint main(void) {\n" + "\n".join(rest) + "\nreturn 0;\n}\n"
        with open(os.path.join(work, "client.c"), "w") as f:
            f.write(src)
        run(["cc", "-std=c99", "-Wall", "-Werror", "-Iruntime/abi", "client.c", "-L.", "-l" + name,
             "-Wl,-rpath," + work, "-o", "client"], "c (build)", src)
        run(["./client"], "c (run)", src)
print(f"python.md: {counts.get('sh', 0)} shell, {counts.get('python', 0)} Python and {counts.get('c', 0)} C blocks run")
