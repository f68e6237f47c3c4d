#!/usr/bin/env python3
"""Checks the rule of docs/kernels.md, "Instruction sets": an object compiled
for a wide level (avx2, avx512, avx512_vnni, amx) defines no weak function.

Such a symbol (an inline function or template instantiated out of line) is
merged by the linker with the baseline objects' copies, and the linker may
keep the wide one: generic code would then run AVX-512 instructions on a CPU
without them. So a level's files keep their code in their own namespace and
call only what inlines. Weak or unique data (nm's V and u: an inline
constexpr table, which sanitizer builds emit out of line) is the same bytes
at every level, so it may be shared. So may a weak function whose name is in
the level's own namespace (`isa_avx512::`, or a library included under a
level-named namespace such as hessian_products_rows.cpp's `Eigen_isa_avx512::`):
no other level's object defines that name.

Usage: isa_objects_test.py <build dir>  (reads compile_commands.json)
"""
import json
import pathlib
import re
import subprocess
import sys



def main() -> int:
    build = pathlib.Path(sys.argv[1])
    commands = json.loads((build / "compile_commands.json").read_text())
    checked, bad = 0, []
    for entry in commands:
        command = entry.get("command") or " ".join(entry.get("arguments", []))
        level = re.search(r"-DTESSERA_ISA_NAMESPACE=isa_(\w+)", command)
        if not level or level.group(1) == "scalar":
            continue
        output = re.search(r"-o (\S+)", command)
        if not output:
            continue
        obj = pathlib.Path(entry["directory"]) / output.group(1)
        if not obj.exists():
            print(f"[  SKIPPED ] {obj} not built")
            continue
        checked += 1
        symbols = subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True, check=True).stdout
        for line in symbols.splitlines():
            parts = line.split(maxsplit=2)
            own = f"isa_{level.group(1)}::"
            if len(parts) == 3 and parts[1] == "W" and own not in parts[2]:  # weak code under a shared name
                bad.append(f"{obj.name} ({level.group(1)}): {parts[2]}")
    if checked == 0:
        print("no object compiled for a wide level was found")
        return 1
    for line in bad:
        print(line)
    print(f"{checked} objects of wide levels checked, {len(bad)} shared functions")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
