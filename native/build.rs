//! Builds the knob layer (knobs/iolens_knobs.c), a plain C shared library that `iolens run --set` preloads
//! into unchanged applications. It is not part of this extension: it is written next to the Python package
//! (src/iolens/knobs/) and ships in the wheel as package data. It needs no HDF5, MPI or netCDF to build.
use std::{env, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=knobs/iolens_knobs.c");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        println!("cargo:warning=the knob layer (LD_PRELOAD) is built on Linux only");
        return;
    }
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let source = manifest.join("knobs").join("iolens_knobs.c");
    let dest_dir = manifest.join("..").join("src").join("iolens").join("knobs");
    let dest = dest_dir.join("libiolens_knobs.so");
    // the cc crate finds the target's C compiler as it does for any build script (CC, zig under maturin --zig)
    let compiler = cc::Build::new().opt_level(2).get_compiler();
    let mut cmd = compiler.to_command();
    cmd.args(["-shared", "-fPIC", "-fno-stack-protector", "-U_FORTIFY_SOURCE", "-o"])
        .arg(&dest)
        .arg(&source)
        // glibc < 2.34 keeps dlsym in libdl: keep it needed so the library loads on old login nodes
        .args(["-Wl,--no-as-needed", "-ldl"]);
    match cmd.status() {
        Ok(status) if status.success() => {}
        Ok(status) => panic!("building the knob layer failed ({status}): {cmd:?}"),
        Err(err) => panic!("building the knob layer: cannot run the C compiler ({err}): {cmd:?}"),
    }
}
