"""``proofflow groth16``: snarkjs's Groth16 commands for one proof, without Airflow.

    proofflow groth16 prove circuit.zkey witness.wtns proof.json public.json      (alias g16p)
    proofflow groth16 fullprove input.json circuit.wasm circuit.zkey proof.json public.json   (g16f)
    proofflow groth16 verify verification_key.json public.json proof.json        (g16v)
    proofflow groth16 calldata public.json proof.json      (zkesc: snarkjs zkey export soliditycalldata)

Arguments in snarkjs's order, outputs in snarkjs's layout (``snarkjs groth16 verify``
accepts them; calldata prints what snarkjs prints, for its Solidity verifier on Ethereum).
The zkey is read directly, its parse kept in the key cache (``circom.dropin``). On the GPU
the proof is made by the device's warm prover service, started on first use
(``--no-service``: in this process). Exit 2 for a file that is unusable or does not fit the
others, 1 for an invalid proof (verify) or an internal error.
"""
from __future__ import annotations

import json
import sys

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
BACKEND_CHOICES = ("auto", "cpu", "gpu")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _guarded(run) -> int:
    """``run()``'s exit status; a failure as one line: exit 2 for bad files and a backend
    that cannot run here, 1 for anything else (a prover service that failed included)."""
    from proofflow.prover.backend.by_name import BackendUnavailable
    from proofflow.prover.service.client import ServiceError
    try:
        return run()
    except (ValueError, OSError, BackendUnavailable) as exc:
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    except ServiceError as exc:  # it could not start, or failed the job: this process can prove instead
        _say(f"error: the prover service: {exc} (--no-service proves in this process)")
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - an internal error: one line, not a traceback
        _say(f"error: internal: {type(exc).__name__}: {exc}")
        return EXIT_FAILED


def _where(done) -> str:
    used = done.service
    if used is None:
        return f"proved on {done.backend} in this process"
    how = f"started ({used.started_s:.1f} s)" if used.started_s is not None else "warm"
    key = "loaded the key" if used.key_loaded else "key resident"
    return f"proved on {used.device} by the prover service pid {used.pid} ({how}, {key})"


def _report(done) -> dict:
    used = done.service
    return {"backend": done.backend, "zkey_cached": done.cached, "cache_dir": str(done.cache_dir),
            "service": None if used is None else {"pid": used.pid, "device": used.device, "socket": str(used.socket),
                                                  "started": used.started_s is not None,
                                                  "start_s": used.started_s, "key_loaded": used.key_loaded}}


def _prove(args, witness) -> int:
    from proofflow.prover.circom import dropin
    done = dropin.prove_files(args.zkey, witness, args.proof, args.public, args.backend, args.service)
    if args.verbose:
        source = "from the key cache" if done.cached else "parsed into the key cache"
        _say(f"groth16: zkey {args.zkey} {source} {done.cache_dir}; {_where(done)}; "
             f"wrote {args.proof} and {args.public}")
    if args.json:
        print(json.dumps(_report(done)), flush=True)
    return EXIT_OK


def cmd_prove(args) -> int:
    from proofflow.prover.circom import dropin
    return _guarded(lambda: _prove(args, dropin.wtns_witness(args.witness)))


def cmd_fullprove(args) -> int:
    from proofflow.prover.circom import dropin
    return _guarded(lambda: _prove(args, dropin.wasm_witness(args.input, args.wasm)))


def cmd_verify(args) -> int:
    def run() -> int:
        from proofflow.prover.circom import verify_files
        if verify_files(args.verification_key, args.public, args.proof):
            print("OK!")
            return EXIT_OK
        _say("error: Invalid proof")
        return EXIT_FAILED
    return _guarded(run)


def cmd_calldata(args) -> int:
    def run() -> int:
        from proofflow.prover.circom import calldata
        print(calldata.calldata_files(args.public, args.proof), flush=True)
        return EXIT_OK
    return _guarded(run)


def _prove_options(p) -> None:
    p.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                   help="where the MSMs run (default auto: the GPU when one is visible, else the CPU)")
    warm = p.add_mutually_exclusive_group()
    warm.add_argument("--service", dest="service", action="store_const", const=True, default=None,
                      help="prove through the device's warm prover service (started on first use, it keeps the "
                           "GPU context, kernels and key resident between calls and stops after "
                           "PROOFFLOW_SERVICE_IDLE_S idle); the default on the GPU (PROOFFLOW_GROTH16_SERVICE)")
    warm.add_argument("--no-service", dest="service", action="store_const", const=False,
                      help="prove in this process; the default on the CPU")
    p.add_argument("-v", "--verbose", action="store_true", help="say on stderr where the key came from and what ran")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout: the backend, the key "
                                                       "cache entry, and the prover service used (null: none)")


def _add_prove(sub, name: str, aliases: list[str]) -> None:
    p = sub.add_parser(name, aliases=aliases, help="prove a witness (.wtns) with a zkey: snarkjs groth16 prove")
    p.add_argument("zkey", help="the circuit's Groth16 .zkey")
    p.add_argument("witness", help="the witness, a .wtns")
    p.add_argument("proof", help="proof.json to write")
    p.add_argument("public", help="public.json to write")
    _prove_options(p)
    p.set_defaults(func=cmd_prove)


def _add_fullprove(sub, name: str, aliases: list[str]) -> None:
    p = sub.add_parser(name, aliases=aliases, help="witness from input.json and the wasm, then prove: "
                                                   "snarkjs groth16 fullprove")
    p.add_argument("input", help="input.json: the circuit's input signals")
    p.add_argument("wasm", help="the circuit's witness generator (circom --wasm)")
    p.add_argument("zkey", help="the circuit's Groth16 .zkey")
    p.add_argument("proof", help="proof.json to write")
    p.add_argument("public", help="public.json to write")
    _prove_options(p)
    p.set_defaults(func=cmd_fullprove)


def _add_verify(sub, name: str, aliases: list[str]) -> None:
    p = sub.add_parser(name, aliases=aliases, help="check a proof: snarkjs groth16 verify (prints OK!, exit 0; "
                                                   "an invalid proof exits 1)")
    p.add_argument("verification_key", help="verification_key.json")
    p.add_argument("public", help="public.json")
    p.add_argument("proof", help="proof.json")
    p.set_defaults(func=cmd_verify)


def _add_calldata(sub, name: str, aliases: list[str]) -> None:
    p = sub.add_parser(name, aliases=aliases, help="print a BN254 proof's Solidity calldata for snarkjs's verifier "
                                                   "contract: snarkjs zkey export soliditycalldata")
    p.add_argument("public", nargs="?", default="public.json", help="public.json (default: public.json)")
    p.add_argument("proof", nargs="?", default="proof.json", help="proof.json (default: proof.json)")
    p.set_defaults(func=cmd_calldata)


def add_parser(sub) -> None:
    g = sub.add_parser("groth16", help="snarkjs's groth16 prove, fullprove and verify for one proof, without Airflow, "
                                       "and its Solidity calldata",
                       description="A drop-in for snarkjs's Groth16 commands: the same arguments in the same order, "
                                   "the same output files. The zkey's parse is kept in the key cache "
                                   "($PROOFFLOW_PARAMS_CACHE/zkeys/<sha256>), so the next call with it starts at once.")
    actions = g.add_subparsers(dest="groth16_command", required=True, metavar="ACTION")
    _add_prove(actions, "prove", ["p"])
    _add_fullprove(actions, "fullprove", ["fp"])
    _add_verify(actions, "verify", ["v"])
    _add_calldata(actions, "calldata", [])
    _add_prove(sub, "g16p", [])  # snarkjs's top-level aliases
    _add_fullprove(sub, "g16f", [])
    _add_verify(sub, "g16v", [])
    _add_calldata(sub, "zkesc", [])
