pragma circom 2.0.0;

// circomlib gadgets: a range check by bit decomposition, a comparison, a hash (compiled for
// BLS12-381 by tests/circom, for BN254 by tests/ethereum).
include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";
include "circomlib/circuits/poseidon.circom";

template Gadgets(BITS) {
    signal input secret;   // private
    signal input salt;     // private
    signal input bound;    // public
    signal output digest;  // Poseidon(secret, salt)
    signal output below;   // secret < bound

    component range = Num2Bits(BITS);
    range.in <== secret;

    component lt = LessThan(BITS);
    lt.in[0] <== secret;
    lt.in[1] <== bound;
    below <== lt.out;

    component hash = Poseidon(2);
    hash.inputs[0] <== secret;
    hash.inputs[1] <== salt;
    digest <== hash.out;
}

component main {public [bound]} = Gadgets(64);
