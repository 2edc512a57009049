//! Lines printed beside a progress bar.

use indicatif::ProgressBar;

/// Prints `line` above `bar`, or on stderr when the bar is hidden (no
/// terminal, `--quiet`): a log still gets every line.
pub fn println(bar: &ProgressBar, line: impl AsRef<str>) {
    if bar.is_hidden() {
        eprintln!("{}", line.as_ref());
    } else {
        bar.println(line);
    }
}
