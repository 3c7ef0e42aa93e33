pragma circom 2.0.0;

// The chain x_{i+1} = x_i (x_i + 1) + c of tests/circom/circuits/chain.circom for K steps, as
// blocks of at most S steps: the same constraints (the links between blocks are equalities that
// circom's --O1 substitutes away), but circom2 compiles one template of K signals in time that
// grows faster than K (130 s at 2^18 against 13 s at 2^16 here), and blocks in linear time.
include "chain.circom";

template ChainBlocks(K, S) {
    signal input x;  // public
    signal input c;
    signal output y;

    var n = (K + S - 1) \ S;
    component block[n];
    for (var i = 0; i < n; i++) {
        block[i] = Chain(i < n - 1 ? S : K - (n - 1) * S, 1);
        block[i].x <== i == 0 ? x : block[i - 1].y;
        block[i].c <== c;
    }
    y <== block[n - 1].y;
}
