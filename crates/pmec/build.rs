//! libpmec.so carries SONAME `libpmec.so.0` (the C ABI's major version): programs linked with
//! `-lpmec` record that name, so an installed `libpmec.so.0.x.y` behind the `libpmec.so.0` link
//! `make install` (and `ldconfig`) make serves them, and a future ABI break can install beside it
//! as `libpmec.so.1`.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpmec.so.0");
    println!("cargo:rerun-if-changed=build.rs");
}
