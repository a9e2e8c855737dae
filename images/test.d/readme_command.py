"""The words of the one command of a README's "Run it by hand" section that starts with `<tool> run`, split as a
POSIX shell splits them (continuations, quotes, comments), each NUL-terminated on stdout: what images/test runs is
what the README shows. Usage: readme_command.py README TOOL (docker, kubectl)."""
import shlex, sys
path, tool = sys.argv[1], sys.argv[2]
parts = open(path, encoding="utf-8").read().split("\n## Run it by hand\n")
if len(parts) != 2:
    sys.exit(f"{path}: not one section \"## Run it by hand\"")
found = []
for block in parts[1].split("\n## ")[0].split("\n```sh\n")[1:]:
    text = ""
    for line in block.split("\n```")[0].replace("\\\n", "").split("\n"):
        text += line + "\n"
        try:
            words = shlex.split(text, comments=True)
        except ValueError:  # inside quotes: the command goes on
            continue
        if words[:2] == [tool, "run"]:
            found.append(words)
        text = ""
if len(found) != 1:
    sys.exit(f"{path}: {len(found)} \"{tool} run\" commands in \"Run it by hand\", not one")
sys.stdout.write("".join(w + "\0" for w in found[0]))
