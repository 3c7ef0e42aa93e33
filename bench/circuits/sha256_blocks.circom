pragma circom 2.0.0;

// SHA-256 of a message that pads to K 512-bit blocks (64 K - 9 bytes), given bit by bit,
// most significant bit of each byte first. The digest is the circuit's public signals:
// two field elements, its first and its last 16 bytes read as big-endian integers.
include "circomlib/circuits/sha256/sha256.circom";
include "circomlib/circuits/bitify.circom";

template Sha256Blocks(K) {
    var N_BITS = 512 * K - 72;  // the 0x80 byte and the 64-bit length complete the last block
    signal input message[N_BITS];
    signal output digest[2];

    component sha = Sha256(N_BITS);
    for (var i = 0; i < N_BITS; i++) {
        sha.in[i] <== message[i];
    }
    component half[2];
    for (var h = 0; h < 2; h++) {
        half[h] = Bits2Num(128);
        for (var i = 0; i < 128; i++) {
            half[h].in[i] <== sha.out[128 * h + 127 - i];
        }
        digest[h] <== half[h].out;
    }
}
