//! libpmec.so carries SONAME `libpmec.so.0` (the C ABI's major version): programs linked with
//! `-lpmec` record that name, so an installed `libpmec.so.0.x.y` behind the `libpmec.so.0` link
//! `make install` (and `ldconfig`) make serves them, and a future ABI break can install beside it
//! as `libpmec.so.1`.

fn main() {
    // rustc-link-arg, not rustc-cdylib-link-arg: cargo passes the latter on to the cdylibs of
    // dependent packages too (the ISA-L shim took this SONAME in place of libisal.so.2). This
    // one applies to pmec's own targets only; its test and example programs carry the name too,
    // which an executable ignores.
    println!("cargo:rustc-link-arg=-Wl,-soname,libpmec.so.0");
    println!("cargo:rerun-if-changed=build.rs");
}
