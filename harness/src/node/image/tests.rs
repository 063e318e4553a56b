//! Unit tests of the node image: `ldd`, what counts as new input, the busybox error.

use super::*;

#[test]
fn ldd_lists_libraries_of_a_dynamic_binary_and_none_of_a_static_one() {
    let this = std::env::current_exe().unwrap();
    let libraries = shared_libraries(&this).unwrap();
    assert!(
        libraries.iter().any(|l| l.to_string_lossy().contains("libc.so")),
        "{libraries:?}"
    );
    if let Ok(busybox) = find_busybox() {
        assert!(shared_libraries(&busybox).unwrap().is_empty());
    }
}

#[test]
fn a_rebuilt_binary_is_a_new_input_and_an_untouched_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("agent");
    std::fs::write(&binary, b"one").unwrap();
    let files = [binary.clone()];
    let first = ImageInputs::of(&files).unwrap();
    assert_eq!(ImageInputs::of(&files).unwrap(), first);
    // The same length, a later modification time: what a rebuild of the same size leaves.
    let file = std::fs::File::options().write(true).open(&binary).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    assert_ne!(ImageInputs::of(&files).unwrap(), first);
    let moved = ImageInputs::of(&files).unwrap();
    std::fs::write(&binary, b"three").unwrap();
    file.set_modified(moved.0[0].2.unwrap()).unwrap();
    assert_ne!(ImageInputs::of(&files).unwrap(), moved, "the length differs");
    // The tag other processes find the image by follows the inputs.
    assert!(
        first.tag().starts_with("mco-conformance-node:inputs-"),
        "{}",
        first.tag()
    );
    assert_eq!(first.tag(), first.clone().tag());
    assert_ne!(moved.tag(), first.tag(), "a later modification time");
    assert_ne!(
        ImageInputs::of(&files).unwrap().tag(),
        moved.tag(),
        "another length"
    );
    let elsewhere = dir.path().join("elsewhere");
    std::fs::copy(&binary, &elsewhere).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&elsewhere)
        .unwrap()
        .set_modified(file.metadata().unwrap().modified().unwrap())
        .unwrap();
    assert_ne!(
        ImageInputs::of(&[elsewhere]).unwrap().tag(),
        ImageInputs::of(&files).unwrap().tag(),
        "another path"
    );
    assert!(matches!(
        ImageInputs::of(&[dir.path().join("gone")]),
        Err(ImageError::Io(path, _)) if path.ends_with("gone")
    ));
}

#[test]
fn a_missing_busybox_is_named_with_the_package_to_install() {
    assert!(
        ImageError::NoBusybox
            .to_string()
            .contains("apt-get install busybox-static")
    );
}
