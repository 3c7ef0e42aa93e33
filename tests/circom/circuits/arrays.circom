pragma circom 2.0.0;

// Array inputs, for the witness runner: input.json gives m as [[...], [...]], flattened
// row by row. out = m·v, so a wrong flattening order changes the witness.
template Arrays() {
    signal input m[2][3];  // private
    signal input v[3];     // public
    signal output out[2];

    signal prod[2][3];
    for (var i = 0; i < 2; i++) {
        for (var j = 0; j < 3; j++) {
            prod[i][j] <== m[i][j] * v[j];
        }
        out[i] <== prod[i][0] + prod[i][1] + prod[i][2];
    }
}

component main {public [v]} = Arrays();
