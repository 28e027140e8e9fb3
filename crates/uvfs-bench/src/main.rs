//! The uvfs lab (thin for now; the lab issue grows it).
fn main() {
    println!("uvfs-bench: the lab CLI arrives with the lab issue");
}
