"""``proofflow circuit``: register circom circuits, list and remove them.

    proofflow circuit add NAME --r1cs C.r1cs --zkey C.zkey [--wasm C.wasm
                          [--witness-generator C_cpp/C | --cpp C_cpp]] [--replace]
    proofflow circuit list [--json]
    proofflow circuit show NAME
    proofflow circuit remove NAME
"""
from __future__ import annotations

import json
import sys

from proofflow.spec import DEFAULT_CURVE


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_add(args) -> int:
    from proofflow.prover.circom import registry
    generator = args.witness_generator
    if args.cpp:
        from proofflow.prover.circom import native_witness
        _say(f"circuit add: building the C++ witness generator in {args.cpp}")
        generator = native_witness.build(args.cpp)
    info = registry.add(args.name, args.r1cs, args.zkey, args.wasm, replace=args.replace,
                        progress=lambda m: _say(f"circuit add: {m}"), generator_path=generator)
    _say(f"circuit add: registered {info['name']} over {info['curve']} (its files' curve; runs take it): "
         f"{info['constraints']} constraints, {info['signals']} signals ({info['public']} public), domain "
         f"2^{info['log2']}, in {registry.circuit_dir(info['name'])}")
    print(registry.dumps(info))
    return 0


def cmd_list(args) -> int:
    from proofflow.prover.circom import registry
    rows = registry.listing()
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no circuits registered (proofflow circuit add NAME --r1cs ... --zkey ...)")
    for r in rows:
        print(f"{r['name']:<24} {r.get('curve', DEFAULT_CURVE):<9} 2^{r['log2']:<3} {r['constraints']:>10} constraints "
              f"{r['public']:>4} public "
              f"{'wasm' if r['wasm'] else 'no wasm (.wtns inputs only)'}")
    return 0


def cmd_show(args) -> int:
    from proofflow.prover.circom import registry
    print(registry.dumps(registry.get(args.name)))
    return 0


def cmd_remove(args) -> int:
    from proofflow.prover.circom import registry
    registry.remove(args.name)
    _say(f"circuit remove: {args.name} removed")
    return 0


def add_parser(sub) -> None:
    c = sub.add_parser("circuit", help="register circom circuits (r1cs + snarkjs zkey, of a registered curve) "
                                       "and list them",
                       description="Circuits proof_run can prove besides the built-in mimc: a circom circuit's "
                                   ".r1cs, its snarkjs Groth16 .zkey and optionally its witness generator .wasm, "
                                   "checked against each other and kept under the proofflow home.")
    csub = c.add_subparsers(dest="circuit_command", required=True, metavar="ACTION")
    a = csub.add_parser("add", help="check and register a circuit's files")
    a.add_argument("name", help="the name proof runs use (lower-case letters, digits, _ and -)")
    a.add_argument("--r1cs", required=True, help="the circuit's .r1cs (circom --r1cs -p bls12381, or -p bn128)")
    a.add_argument("--zkey", required=True, help="its Groth16 .zkey (snarkjs groth16 setup, or proofflow setup --r1cs)")
    a.add_argument("--wasm", help="its witness generator (circom --wasm), to prove from input.json files")
    g = a.add_mutually_exclusive_group()
    g.add_argument("--witness-generator", metavar="PROGRAM",
                   help="circom's C++ witness generator (circom --c, built with make; PROGRAM.dat beside it), "
                        "used instead of the wasm (with --wasm)")
    g.add_argument("--cpp", metavar="DIR", help="circom --c's output directory: built with make (g++, nasm, "
                                                "libgmp-dev, nlohmann-json3-dev), then registered as --witness-generator")
    a.add_argument("--replace", action="store_true", help="replace a circuit registered under this name")
    a.set_defaults(func=cmd_add)
    s = csub.add_parser("list", help="the registered circuits")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_list)
    s = csub.add_parser("show", help="one circuit's record (sizes, files and their SHA-256)")
    s.add_argument("name")
    s.set_defaults(func=cmd_show)
    s = csub.add_parser("remove", help="forget a circuit (its files under the proofflow home)")
    s.add_argument("name")
    s.set_defaults(func=cmd_remove)
