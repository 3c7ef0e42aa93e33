// snarkjs's Groth16 verifier contract on an in-process EVM: compiled with solcjs, deployed
// into @ethereumjs/vm, its verifyProof called with `snarkjs zkey export soliditycalldata`'s
// output (versions pinned by package-lock.json).
//
//   node evm_verify.mjs compile verifier.sol compiled.json
//       compile once: the creation bytecode and the selectors, as JSON
//   node evm_verify.mjs verify verifier.sol|compiled.json < calldata.txt
//       deploy, then one verifyProof call per line of stdin (one calldata a line); prints a
//       JSON line per call: {"verified": true|false, "gas": <execution gas>, "reverted": false}
//       (a call that reverts: "verified": false, "reverted": true and the "error")
//
// Exit 0 when every call ran (whatever it returned), 2 for unusable input.
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";

import { Common, Hardfork, Mainnet } from "@ethereumjs/common";
import { bytesToHex, hexToBytes } from "@ethereumjs/util";
import { createVM } from "@ethereumjs/vm";
import solc from "solc";

// Prague has the BN254 precompiles (EIP-196/197 since Byzantium, at EIP-1108's prices).
const HARDFORK = Hardfork.Prague;
const CONTRACT = "Groth16Verifier";  // the name in snarkjs's template
const GAS_LIMIT = 30_000_000n;
const WORD = 2n ** 256n;

function fail(message) {
    process.stderr.write(`error: ${message}\n`);
    process.exit(2);
}

function compile(solPath) {
    const name = basename(solPath);
    const input = {
        language: "Solidity",
        sources: { [name]: { content: readFileSync(solPath, "utf8") } },
        settings: { optimizer: { enabled: true, runs: 200 },
                    outputSelection: { "*": { [CONTRACT]: ["evm.bytecode.object", "evm.methodIdentifiers"] } } },
    };
    const out = JSON.parse(solc.compile(JSON.stringify(input)));
    const errors = (out.errors || []).filter((e) => e.severity === "error");
    if (errors.length) fail(`${solPath} does not compile:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
    const contract = out.contracts?.[name]?.[CONTRACT];
    if (!contract) fail(`${solPath} has no contract ${CONTRACT}`);
    return { solc: solc.version(), bytecode: contract.evm.bytecode.object,
             methodIdentifiers: contract.evm.methodIdentifiers };
}

// verifyProof(uint256[2],uint256[2][2],uint256[2],uint256[N]): its selector and N.
function verifyProofAbi(compiled) {
    const entries = Object.entries(compiled.methodIdentifiers).filter(([sig]) => sig.startsWith("verifyProof("));
    if (entries.length !== 1) fail("the contract has no single verifyProof function");
    const [sig, selector] = entries[0];
    const n = sig.match(/^verifyProof\(uint256\[2\],uint256\[2\]\[2\],uint256\[2\],uint256\[(\d+)\]\)$/);
    if (!n) fail(`verifyProof has an unexpected signature ${sig}`);
    return { selector, nPublic: Number(n[1]) };
}

// The ABI encoding of soliditycalldata's four static arrays: their words in order.
function encodeCall(abi, line, number) {
    let args;
    try {
        args = JSON.parse(`[${line}]`);
    } catch {
        fail(`calldata line ${number} is not soliditycalldata's four arrays`);
    }
    const shape = Array.isArray(args) && args.length === 4 && args[0].length === 2 && args[1].length === 2 &&
        args[1].every((row) => Array.isArray(row) && row.length === 2) && args[2].length === 2 &&
        Array.isArray(args[3]);
    if (!shape) fail(`calldata line ${number} is not [a], [[b], [b]], [c], [public signals]`);
    if (args[3].length !== abi.nPublic) {
        fail(`calldata line ${number} has ${args[3].length} public signals, the contract takes ${abi.nPublic}`);
    }
    const words = args.flat(2).map((text) => {
        const value = typeof text === "string" && /^0x[0-9a-fA-F]{1,64}$/.test(text) ? BigInt(text) : -1n;
        if (value < 0n || value >= WORD) fail(`calldata line ${number}: ${JSON.stringify(text)} is not a uint256 in hex`);
        return value.toString(16).padStart(64, "0");
    });
    return hexToBytes(`0x${abi.selector}${words.join("")}`);
}

async function verify(path) {
    const compiled = path.endsWith(".sol") ? compile(path) : JSON.parse(readFileSync(path, "utf8"));
    const abi = verifyProofAbi(compiled);
    const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.trim() !== "");
    const calls = lines.map((line, i) => encodeCall(abi, line, i + 1));
    const vm = await createVM({ common: new Common({ chain: Mainnet, hardfork: HARDFORK }) });
    const deployed = await vm.evm.runCall({ data: hexToBytes(`0x${compiled.bytecode}`), gasLimit: GAS_LIMIT });
    if (deployed.execResult.exceptionError || !deployed.createdAddress) {
        fail(`deploying ${path} failed: ${deployed.execResult.exceptionError?.error ?? "no address"}`);
    }
    for (const data of calls) {
        const run = await vm.evm.runCall({ to: deployed.createdAddress, data, gasLimit: GAS_LIMIT });
        const r = run.execResult;
        const gas = Number(r.executionGasUsed);
        if (r.exceptionError) {
            console.log(JSON.stringify({ verified: false, gas, reverted: true, error: String(r.exceptionError.error) }));
            continue;
        }
        const ret = bytesToHex(r.returnValue);
        if (ret.length !== 66) fail(`verifyProof returned ${ret}, not one word`);
        console.log(JSON.stringify({ verified: BigInt(ret) === 1n, gas, reverted: false }));
    }
}

const [command, ...args] = process.argv.slice(2);
if (command === "compile" && args.length === 2) {
    writeFileSync(args[1], JSON.stringify(compile(args[0])));
} else if (command === "verify" && args.length === 1) {
    await verify(args[0]);
} else {
    fail("usage: evm_verify.mjs compile verifier.sol compiled.json | verify verifier.sol|compiled.json < calldata");
}
