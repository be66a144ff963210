//! The executioner threads: a pool of G_1 threads that run CPU callbacks
//! (stage-1 commands) for every dispatcher and report each back to the dispatcher that
//! issued it. A panic in a callback is caught here and becomes that task's failure.

use crate::callback::{run_caught, CallInfo, CallbackFailure, CpuFn};
use crate::sync::channel::{Receiver, Sender};
use std::thread::JoinHandle;

/// A CPU callback on its way to an executioner.
pub(crate) struct CpuJob {
    pub(crate) f: CpuFn,
    pub(crate) info: CallInfo,
    /// Where to say it is done: the owning dispatcher's completion channel.
    pub(crate) done: Sender<CpuDone>,
    pub(crate) wake: std::sync::Arc<crate::signal::Signal>,
    pub(crate) epoch: std::time::Instant,
}

/// A finished CPU callback.
#[derive(Debug)]
pub(crate) struct CpuDone {
    pub(crate) stream: usize,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) result: Result<(), CallbackFailure>,
}

/// The executioner threads: run CPU callbacks, report back to the dispatcher.
#[derive(Debug)]
pub(crate) struct Executioners {
    jobs: Option<Sender<CpuJob>>,
    threads: Vec<JoinHandle<()>>,
}

impl Executioners {
    /// Starts `count` executioners. The caller caps `count` at what can run at once
    /// (G_1, and never more than the D·S tasks that hold a stream slot).
    pub(crate) fn start(count: usize) -> crate::Result<Self> {
        let (tx, rx) = crate::sync::channel::unbounded::<CpuJob>();
        let mut pool = Executioners { jobs: Some(tx), threads: Vec::with_capacity(count) };
        for i in 0..count {
            let rx: Receiver<CpuJob> = rx.clone();
            let name = format!("chariot-exec-{i}");
            let handle = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || executioner(rx))
                .map_err(|e| crate::Error::Thread { name, message: e.to_string() })?;
            pool.threads.push(handle);
        }
        Ok(pool)
    }

    pub(crate) fn sender(&self) -> Sender<CpuJob> {
        self.jobs.clone().expect("executioners run until the scheduler drops")
    }

    /// Closes the job queue and joins every executioner.
    pub(crate) fn stop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            // Callbacks run through `run_caught` (a panic fails its task): a join error
            // would be a panic the hook has printed already.
            let _ = t.join();
        }
    }
}

impl Drop for Executioners {
    fn drop(&mut self) {
        self.stop();
    }
}

fn executioner(jobs: Receiver<CpuJob>) {
    // Ends when every sender (scheduler and dispatchers) is gone.
    while let Ok(job) = jobs.recv() {
        run(job);
    }
}

/// Runs one CPU callback and reports it to its dispatcher (the model checks' executioner
/// runs jobs through this too).
pub(crate) fn run(job: CpuJob) {
    let start_ns = job.epoch.elapsed().as_nanos() as u64;
    let info = job.info;
    let f = job.f;
    let result = run_caught(|| f(&info));
    let end_ns = job.epoch.elapsed().as_nanos() as u64;
    // The dispatcher outlives its jobs (it waits for them); a closed channel only
    // happens after a dispatcher panic, and then nobody waits for this result.
    let _ = job.done.send(CpuDone { stream: info.stream, start_ns, end_ns, result });
    job.wake.notify();
}
