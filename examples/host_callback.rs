//! A host buffer shared with CPU callbacks: each chunk is doubled on the GPU, read
//! back, and then a CPU callback adds the chunk's offset, which it reads from a table
//! in another host buffer. `cargo run --example host_callback` (the sim backend where
//! there is no GPU); every output element is checked against the CPU.
//!
//! A callback runs later, on an executioner thread, so it owns what it uses (`'static`):
//! a host buffer it reads besides its task's own regions is shared through an `Arc`,
//! and read through a guard (`read_range`), which waits for any task writing those
//! elements. The task's own region comes as a slice (`callback_writing`), claimed for
//! the task like its readback. A buffer that callbacks write besides their own regions
//! would need `Arc<Mutex<HostBuffer>>`, as `write` takes `&mut`.

use chariot::callback::Resource;
use chariot::{Arg, Kernel, Param, Scheduler};
use std::sync::Arc;

const SOURCE: &str = r#"extern "C" __global__ void twice(unsigned* o, const unsigned* i, unsigned n) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) o[t] = 2 * i[t];
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sched = Scheduler::builder().build()?;
    let (n, chunks) = (1usize << 14, 16usize);
    let mut input = sched.alloc_host::<u32>(n * chunks)?;
    let output = sched.alloc_host::<u32>(n * chunks)?;
    input.write().iter_mut().enumerate().for_each(|(j, x)| *x = j as u32);
    // The table the callbacks read: filled here, then shared.
    let mut offsets = sched.alloc_host::<u32>(chunks)?;
    offsets.write().iter_mut().enumerate().for_each(|(c, x)| *x = 1000 * c as u32);
    let offsets = Arc::new(offsets);

    let d_in = sched.alloc::<u32>(n)?;
    let d_out = sched.alloc::<u32>(n)?;
    let twice = sched.register_kernel(
        Kernel::new("twice", SOURCE).params([Param::Buffer, Param::Buffer, Param::U32]).cpu_twin(|a| {
            let n = a.u32(2)? as usize;
            let (i, o) = a.in_out::<u32, u32>(1, 0)?;
            o[..n].iter_mut().zip(&i[..n]).for_each(|(o, i)| *o = 2 * i);
            Ok(())
        }),
    )?;
    for c in 0..chunks {
        let r = c * n..(c + 1) * n;
        let table = Arc::clone(&offsets);
        sched
            .task(c as u64, n as u64)
            .download(&d_in, 0, &input, r.clone())
            .launch(
                &twice,
                (n as u32).div_ceil(256),
                256,
                0,
                &[Arg::buffer(&d_out), Arg::buffer(&d_in), Arg::u32(n as u32)],
            )
            .readback(&output, r.clone(), &d_out, 0)
            .callback_writing(&output, r, move |chunk, _info| {
                let offset = table.read_range(c..c + 1)?[0];
                chunk.iter_mut().for_each(|x| *x += offset);
                Ok(())
            })
            .submit()?;
    }
    // A CPU callback that only reads the shared table, beside the tasks above.
    let table = Arc::clone(&offsets);
    let (tx, rx) = std::sync::mpsc::channel();
    sched
        .task(chunks as u64, 1)
        .callback(Resource::Cpu, move |_| {
            tx.send(table.read().iter().map(|&x| u64::from(x)).sum::<u64>())?;
            Ok(())
        })
        .submit()?;
    let report = sched.synchronize()?;

    let (input, output, offsets) = (input.read(), output.read(), offsets.read());
    let wrong: Vec<usize> = (0..n * chunks).filter(|&j| output[j] != 2 * input[j] + offsets[j / n]).take(5).collect();
    if !wrong.is_empty() {
        let shown: Vec<String> = wrong
            .iter()
            .map(|&j| format!("[{j}] = {} (expected {})", output[j], 2 * input[j] + offsets[j / n]))
            .collect();
        return Err(format!("wrong outputs, first: {}", shown.join(", ")).into());
    }
    let sum = rx.recv()?;
    let expected: u64 = offsets.iter().map(|&x| u64::from(x)).sum();
    if sum != expected {
        return Err(format!("the callback summed the table to {sum}, not {expected}").into());
    }
    println!(
        "{} elements checked: each is 2 x input + its chunk's offset; T = {:.3} ms on {}",
        n * chunks,
        report.makespan_ms(),
        report.backend
    );
    Ok(())
}

// `cargo test` runs the example through this test (`test = true` in Cargo.toml).
#[cfg(test)]
mod tests {
    #[test]
    fn every_element_is_checked() {
        super::main().unwrap();
    }
}
