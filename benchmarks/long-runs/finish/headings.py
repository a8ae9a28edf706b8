"""Update README's neighbour-pair headings from `python -m common.diff_matrix --check/--write` output on stdin."""
import re, sys
from pathlib import Path
readme = Path(sys.argv[1])
s = readme.read_text()
for line in sys.stdin:
    m = re.match(r"\s+(\S+) -> (\S+): (\d+) outside, (\d+) inside copied blocks, (\d+) of code .*GNU diff: (\d+)", line)
    if not m:
        continue
    a, b, outside, inside, code, diff = m.groups()
    pat = re.compile(rf"(\*\*`{re.escape(a)}` -> `{re.escape(b)}`\*\* \()(\d+) lines, (\d+) of code(; \d+ more in copied blocks)?; `diff`: (\d+)\)")
    more = f"; {inside} more in copied blocks" if int(inside) > 100 else None
    def sub(mm):
        extra = mm.group(4) if mm.group(4) is None else f"; {inside} more in copied blocks"
        return f"{mm.group(1)}{outside} lines, {code} of code{extra or ''}; `diff`: {diff})"
    s, n = pat.subn(sub, s)
    print(a, b, "updated" if n else "NOT FOUND")
readme.write_text(s)
