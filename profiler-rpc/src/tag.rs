//! Naming the calling thread after the ABCI connection it serves (see [`crate::role`]):
//! the root frame of its samples and how the renderer splits samples by role.

use std::cell::Cell;
use std::ffi::CStr;

use crate::role::Role;

thread_local! {
    static TAGGED: Cell<Option<Role>> = const { Cell::new(None) };
}

/// Tags the calling thread as serving `role`: sets its pthread name to the role's name.
///
/// Cheap and idempotent: after the first call on a thread, a repeated call with the same
/// role is one thread-local read, so an ABCI handler can call it on every request. A
/// different role renames the thread again. Call it from `check_tx` (mempool connection)
/// and from `finalize_block` / `commit` (consensus connection).
pub fn tag_current_thread(role: Role) {
    TAGGED.with(|tagged| {
        if tagged.get() == Some(role) {
            return;
        }
        if let Err(errno) = set_current_thread_name(thread_name(role)) {
            tracing::warn!(role = %role, errno, "cannot name ABCI thread; its samples stay untagged");
        }
        tagged.set(Some(role));
    });
}

/// The role the calling thread was last tagged with, if any.
pub fn current_thread_role() -> Option<Role> {
    TAGGED.with(Cell::get)
}

#[cfg(target_os = "linux")]
fn set_current_thread_name(name: &CStr) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated and at most 15 bytes long, as Linux requires.
    let rc = unsafe { libc::pthread_setname_np(libc::pthread_self(), name.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(rc)
    }
}

#[cfg(target_os = "macos")]
fn set_current_thread_name(name: &CStr) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated; macOS names only the calling thread.
    let rc = unsafe { libc::pthread_setname_np(name.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(rc)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn set_current_thread_name(_name: &CStr) -> Result<(), i32> {
    Err(libc::ENOSYS)
}

/// The role's name as a thread name (NUL-terminated, at most 15 bytes).
fn thread_name(role: Role) -> &'static CStr {
    match role {
        Role::CheckTx => c"check_tx",
        Role::DeliverTx => c"deliver_tx",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn current_pthread_name() -> String {
        let mut buf = [0 as libc::c_char; 16];
        // SAFETY: the buffer is 16 bytes, the maximum Linux thread name with its NUL.
        let rc =
            unsafe { libc::pthread_getname_np(libc::pthread_self(), buf.as_mut_ptr(), buf.len()) };
        assert_eq!(rc, 0);
        // SAFETY: pthread_getname_np NUL-terminates on success.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tagging_names_the_thread_and_can_change_role() {
        std::thread::spawn(|| {
            assert_eq!(current_thread_role(), None);
            tag_current_thread(Role::CheckTx);
            tag_current_thread(Role::CheckTx);
            assert_eq!(current_pthread_name(), "check_tx");
            assert_eq!(current_thread_role(), Some(Role::CheckTx));
            tag_current_thread(Role::DeliverTx);
            assert_eq!(current_pthread_name(), "deliver_tx");
            assert_eq!(current_thread_role(), Some(Role::DeliverTx));
        })
        .join()
        .expect("tagging thread panicked");
    }
}
