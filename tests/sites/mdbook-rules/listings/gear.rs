fn main() {
    // ANCHOR: body
    let teeth = 12;
    // ANCHOR_END: body
}
