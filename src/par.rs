//! Map over (or update) a slice in parallel when there is enough work for it. Below `SERIAL_BELOW` items
//! the map runs on the calling thread: handing a few items to rayon's pool (waking its threads,
//! and waiting for them to be scheduled on a busy machine) costs more than the items do.

use rayon::prelude::*;
use std::sync::Mutex;

const SERIAL_BELOW: usize = 128;

/// `items.iter().enumerate().map(f).collect()`, in parallel for long slices.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < SERIAL_BELOW {
        items.iter().enumerate().map(|(i, x)| f(i, x)).collect()
    } else {
        items.par_iter().enumerate().map(|(i, x)| f(i, x)).collect()
    }
}

/// `items.iter().enumerate().map(f).collect::<Result<Vec<R>, E>>()`, in parallel for long
/// slices: the error of the first item that failed, else the results. Each result is written
/// once into a list of the final layout (a list of `Result`s is larger than one of `R`s, so
/// collecting it again would copy every result into fresh memory).
pub fn try_map<T: Sync, R: Send, E: Send>(
    items: &[T],
    f: impl Fn(usize, &T) -> Result<R, E> + Sync + Send,
) -> Result<Vec<R>, E> {
    if items.len() < SERIAL_BELOW {
        return items.iter().enumerate().map(|(i, x)| f(i, x)).collect();
    }
    let failed: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let out: Vec<Option<R>> = items
        .par_iter()
        .enumerate()
        .map(|(i, x)| match f(i, x) {
            Ok(r) => Some(r),
            Err(e) => {
                let mut first = failed.lock().unwrap_or_else(|p| p.into_inner());
                if first.as_ref().is_none_or(|(j, _)| i < *j) {
                    *first = Some((i, e));
                }
                None
            }
        })
        .collect();
    if let Some((_, e)) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    // `Option<R>` has `R`'s layout when `R` has a niche (a graph node does): this reuses the list.
    Ok(out.into_iter().map(|r| r.expect("every item succeeded")).collect())
}

/// The error of the first item (in item order) for which `f` fails, in parallel for long
/// slices; nothing is collected for the items that pass.
pub fn first_err<T: Sync, E: Send>(items: &[T], f: impl Fn(usize, &T) -> Result<(), E> + Sync + Send) -> Result<(), E> {
    let found = if items.len() < SERIAL_BELOW {
        items.iter().enumerate().find_map(|(i, x)| f(i, x).err())
    } else {
        items.par_iter().enumerate().find_map_first(|(i, x)| f(i, x).err())
    };
    found.map_or(Ok(()), Err)
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
    fn try_map_gives_the_first_error_in_item_order() {
        for n in [10, 1000] {
            let items: Vec<usize> = (0..n).collect();
            assert_eq!(super::try_map(&items, |_, &x| Ok::<_, usize>(x * 2)), Ok((0..n).map(|x| x * 2).collect()));
            let odd_after_3 = super::try_map(&items, |_, &x| if x > 3 && x % 2 == 1 { Err(x) } else { Ok(x) });
            assert_eq!(odd_after_3, Err(5));
        }
    }

    #[test]
    fn first_err_gives_the_first_error_in_item_order() {
        for n in [10, 1000] {
            let items: Vec<usize> = (0..n).collect();
            assert_eq!(super::first_err(&items, |_, &x| if x > 3 && x % 2 == 1 { Err(x) } else { Ok(()) }), Err(5));
            assert_eq!(super::first_err(&items, |i, &x| if i == x { Ok(()) } else { Err(x) }), Ok(()));
        }
    }

    #[test]
    fn same_result_serial_and_parallel() {
        for n in [0, 3, super::SERIAL_BELOW, 1000] {
            let items: Vec<usize> = (0..n).collect();
            assert_eq!(super::map(&items, |i, x| i * 10 + x), (0..n).map(|i| i * 11).collect::<Vec<_>>());
        }
    }
}
