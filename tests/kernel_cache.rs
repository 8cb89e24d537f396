//! The on-disk cache of compiled kernels (`gpu::kernels::compile_cached`): entries are used
//! only for exactly their key, and a cached module is the one NVRTC compiled. One test in its
//! own process, since it sets `GMP_KERNEL_CACHE`.

mod common;

use gpu_motion_planner::gpu::kernels::{
    cache_file, cache_key, cached_ptx, collision_source, compile_cached, store_ptx,
    KERNEL_CACHE_ENV,
};

#[test]
fn the_kernel_cache_serves_exactly_what_was_compiled() {
    let dir = tempfile::tempdir().expect("temp dir");

    // The file format, without NVRTC: a stored entry is found for its key only.
    let (key_a, key_b) = ("key a\nsource one", "key b\nsource two");
    store_ptx(dir.path(), key_a, "// ptx a\n").expect("store");
    assert_eq!(cached_ptx(dir.path(), key_a).as_deref(), Some("// ptx a\n"));
    assert_eq!(cached_ptx(dir.path(), key_b), None);
    // Another key's entry under this key's file name (a hash collision) is not used.
    let other = format!("{}\n{key_b}// ptx b\n", key_b.len());
    std::fs::write(cache_file(dir.path(), key_a), other).expect("write");
    assert_eq!(cached_ptx(dir.path(), key_a), None);
    // A truncated entry is not used either.
    std::fs::write(cache_file(dir.path(), key_a), "11\nkey a\n").expect("write");
    assert_eq!(cached_ptx(dir.path(), key_a), None);

    if !common::nvrtc_or_skip("the_kernel_cache_serves_exactly_what_was_compiled (NVRTC part)") {
        return;
    }
    let cache = dir.path().join("kernels");
    // SAFETY (edition 2021: safe call): this test is alone in its process.
    std::env::set_var(KERNEL_CACHE_ENV, &cache);
    let src = collision_source();
    let (first, hit) = compile_cached(&src, "compute_90", None).expect("compiles");
    assert!(!hit, "an empty cache cannot hit");
    let key = cache_key(&src, "compute_90", None);
    assert!(cache_file(&cache, &key).is_file(), "the entry was written");
    let (second, hit) = compile_cached(&src, "compute_90", None).expect("from the cache");
    assert!(hit, "the second compile comes from the cache");
    assert_eq!(second.to_src(), first.to_src());
    common::assert_exact_collision_ptx("cached collision module", &second.to_src());
    // Other options or another architecture are other entries.
    let (_, hit) = compile_cached(&src, "compute_90", Some(64)).expect("compiles");
    assert!(!hit, "a register cap is another key");
    let (_, hit) = compile_cached(&src, "compute_80", None).expect("compiles");
    assert!(!hit, "another architecture is another key");
    // Switched off: compiled, nothing read.
    std::env::set_var(KERNEL_CACHE_ENV, "off");
    let (_, hit) = compile_cached(&src, "compute_90", None).expect("compiles");
    assert!(!hit);
}
