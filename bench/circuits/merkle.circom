pragma circom 2.0.0;

// K Poseidon Merkle membership proofs against one root: leaf k sits in a binary tree of
// depth DEPTH, its siblings and its position's bits given per level. The root each path
// reaches must be the same; it is the circuit's one public signal, so a verifier learns
// the root and nothing of the leaves.
include "circomlib/circuits/poseidon.circom";

// One level: the node and its sibling ordered by the position bit (1: the node is the
// right child), hashed. One multiplication orders the pair.
template MerkleLevel() {
    signal input node;
    signal input sibling;
    signal input bit;
    signal output parent;

    bit * (1 - bit) === 0;
    signal swap <== bit * (sibling - node);
    component hash = Poseidon(2);
    hash.inputs[0] <== node + swap;
    hash.inputs[1] <== sibling - swap;
    parent <== hash.out;
}

template MerkleMembership(K, DEPTH) {
    signal input leaf[K];
    signal input siblings[K][DEPTH];
    signal input bits[K][DEPTH];
    signal output root;

    component level[K][DEPTH];
    signal reached[K];
    for (var k = 0; k < K; k++) {
        for (var d = 0; d < DEPTH; d++) {
            level[k][d] = MerkleLevel();
            level[k][d].node <== d == 0 ? leaf[k] : level[k][d - 1].parent;
            level[k][d].sibling <== siblings[k][d];
            level[k][d].bit <== bits[k][d];
        }
        reached[k] <== level[k][DEPTH - 1].parent;
        if (k > 0) {
            reached[k] === reached[0];
        }
    }
    root <== reached[0];
}
