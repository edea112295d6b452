fn main() {
    // ANCHOR: turn
    let cog = Cog::new();
    cog.turn(3);
    // ANCHOR_END: turn
    println!("done");
}
