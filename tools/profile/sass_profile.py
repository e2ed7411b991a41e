"""tools/profile/sass_profile.py - where a kernel's instructions and stalls go, per source line.

Joins Nsight Compute's per-instruction counters with the source lines of the same object's SASS:

    # on the GPU machine (the build carries -lineinfo):
    ncu --clock-control none -k regex:linrec_ahead_f32 --launch-skip 1 --launch-count 1 \\
        --section SourceCounters --section WarpStateStats -o rep \
        python3 tools/profile/ncu_apps.py 28
    ncu -i rep.ncu-rep --page source --csv --print-source sass > sass.csv
    # anywhere with nvdisasm (the kernel's object compiled with -lineinfo, -cubin):
    nvdisasm -g -c linrec.cubin > linrec.sass
    python3 tools/profile/sass_profile.py sass.csv linrec.sass linrec_ahead_f32 [lines] [steps]

Prints the executed instructions (per step when `steps`, the work's element count, is given,
counted per thread: warp instructions x 32 / steps) and the share of stall samples of the
busiest source lines, with their three main stall reasons, then the opcodes' shares of the
executed instructions.  The instructions are matched by their offset in the kernel; a count of
instructions whose opcode differs between the two files is printed, and should be 0 (else the
objects differ).  Without nvdisasm (the dev machine has none), give `-` for the SASS file: each
instruction is then its own line, named by its offset and text from ncu's CSV, and the lines
printed are those with the most stall samples.
"""
import collections
import csv
import re
import sys


def source_lines(sass_path, kernel):
    """{offset: ((file, line), text)} of the kernel's instructions in nvdisasm -g output."""
    found, current, loc = {}, None, None
    with open(sass_path) as f:
        for line in f:
            m = re.match(r"^\s*\.text\.(\S+):", line)
            if m:
                current = m.group(1)
                continue
            if current is None or kernel not in current:
                continue
            m = re.search(r'//## File "([^"]+)", line (\d+)', line)
            if m:
                loc = (m.group(1).split("/")[-1], int(m.group(2)))
                continue
            m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
            if m:
                found[int(m.group(1), 16)] = (loc, m.group(2))
    return found


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    csv_path, sass_path, kernel = argv[1:4]
    top = int(argv[4]) if len(argv) > 4 else 40
    steps = float(argv[5]) if len(argv) > 5 else None
    rows = [r for r in csv.reader(open(csv_path)) if r]
    header = next(i for i, r in enumerate(rows) if r[0] == "Address")
    col = {h: i for i, h in enumerate(rows[header])}
    data = [r for r in rows[header + 1:] if len(r) == len(rows[header])]
    lines = source_lines(sass_path, kernel) if sass_path != "-" else None
    base = int(data[0][col["Address"]], 16)
    stalls = [h for h in rows[header] if h.startswith("stall_") and "Not Issued" not in h]
    executed, samples, opcodes = (collections.Counter() for _ in range(3))
    reasons = collections.defaultdict(collections.Counter)
    mismatched = 0
    for r in data:
        offset = int(r[col["Address"]], 16) - base
        if lines is None:
            loc, text = (f"{offset:#06x}", " ".join(r[col["Source"]].split())[:40]), ""
        else:
            loc, text = lines.get(offset, (None, ""))
        words = r[col["Source"]].split()
        op = words[1] if words and words[0].startswith("@") and len(words) > 1 else (
            words[0] if words else "")
        if text and op.split(".")[0] not in text:
            mismatched += 1
        count = int(float(r[col["Instructions Executed"]] or 0))
        executed[loc] += count
        opcodes[op.split(".")[0]] += count
        samples[loc] += float(r[col["Warp Stall Sampling (All Samples)"]] or 0)
        for h in stalls:
            if r[col[h]] and float(r[col[h]]):
                reasons[loc][h[len("stall_"):]] += float(r[col[h]])
    total, sampled = sum(executed.values()), sum(samples.values()) or 1.0
    scale = 32.0 / steps if steps else 1.0
    unit = "per step" if steps else "warp instructions"
    print(f"{kernel}: {total} warp instructions executed ({total * scale:.1f} {unit}), "
          f"{int(sampled)} stall samples, {mismatched} opcodes differing between the files")
    # Per instruction (no SASS file), the ones the warps stalled at most; per line, the busiest.
    for loc, _ in (samples if lines is None else executed).most_common(top):
        count = executed[loc]
        main3 = ", ".join(f"{k} {v / sampled:.1%}" for k, v in reasons[loc].most_common(3))
        where = f"{loc[0]}:{loc[1]}" if loc else "?"
        print(f"{count * scale:12.2f} {samples[loc] / sampled:6.1%}  {where:32s} {main3}")
    print("opcodes: " + ", ".join(f"{op} {c / (total or 1):.1%}"
                                  for op, c in opcodes.most_common(12)))


if __name__ == "__main__":
    main(sys.argv)
