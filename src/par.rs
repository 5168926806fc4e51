//! Map over (or update) a slice in parallel when there is enough work for it. Below `SERIAL_BELOW` items
//! the map runs on the calling thread: handing a few items to rayon's pool (waking its threads,
//! and waiting for them to be scheduled on a busy machine) costs more than the items do.

use rayon::prelude::*;

const SERIAL_BELOW: usize = 128;

/// `items.iter().enumerate().map(f).collect()`, in parallel for long slices.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < SERIAL_BELOW {
        items.iter().enumerate().map(|(i, x)| f(i, x)).collect()
    } else {
        items.par_iter().enumerate().map(|(i, x)| f(i, x)).collect()
    }
}

/// `items.iter_mut().for_each(f)`, in parallel for long slices.
pub fn for_each_mut<T: Send>(items: &mut [T], f: impl Fn(&mut T) + Sync + Send) {
    if items.len() < SERIAL_BELOW {
        items.iter_mut().for_each(f)
    } else {
        items.par_iter_mut().for_each(f)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_result_serial_and_parallel() {
        for n in [0, 3, super::SERIAL_BELOW, 1000] {
            let items: Vec<usize> = (0..n).collect();
            assert_eq!(super::map(&items, |i, x| i * 10 + x), (0..n).map(|i| i * 11).collect::<Vec<_>>());
        }
    }
}
