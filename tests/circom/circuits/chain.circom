pragma circom 2.0.0;

// x_{i+1} = x_i * (x_i + K) + c: one multiplication per step, so STEPS sets the size. The
// tests instantiate it (component main) at the sizes they need; K changes coefficients of
// B (which a zkey stores) without changing the shape.
template Chain(STEPS, K) {
    signal input x;       // public
    signal input c;       // private
    signal output y;

    signal acc[STEPS + 1];
    acc[0] <== x;
    for (var i = 0; i < STEPS; i++) {
        acc[i + 1] <== acc[i] * (acc[i] + K) + c;
    }
    y <== acc[STEPS];
}
