//! What each report section models and what it leaves out, printed under the section so a
//! reader never has to guess which effects a figure can contain.

/// (section, the note) in report order.
pub const SCOPE: [(&str, &str); 7] = [
    (
        "device",
        "Modelled: bus and bank timing (tRCD, tCL, tCWD, tBURST, tRP, tRAS, tWR, tWTR, tRTP, \
         tFAW, tRRD), open-page rows, NVM cell writes that hold their bank, an Optane-like 256 B \
         XPLine read buffer, the read queue and the write pending queue with watermarked write \
         drain, ADR, FR-FCFS or FCFS; DDR4 refresh (tREFI, tRFC) and one command clock from \
         acceptance to the first command (`controller.frontend_ns`) in `ddr4-2400` (the NVM \
         presets have neither). Not modelled: energy, wear levelling, Optane's address \
         translation, the on-chip path from the core to the controller.",
    ),
    (
        "workloads",
        "Modelled: pmwork's re-implementations of the papers' programs (not their binaries), \
         each thread in a partition of its own (no data shared across threads), on interval \
         cores (ROB, MLP, store buffer, x86 flush and fence rules) with the presets' caches. \
         Not modelled: branch prediction and the pipeline in detail; a bound on the \
         write-backs a core has in flight (real fill buffers hold about ten).",
    ),
    (
        "pmweaver",
        "Modelled: counter-mode encryption with a Bonsai Merkle tree and MACs, and inline \
         deduplication, with the artifact's sub-operation latencies; PMWeaver's predictor with \
         Table I's sizes, Janus-style hints and an ideal predictor. Not modelled: energy \
         (Fig. 27); gem5's out-of-order core (pmlab's cores are interval models).",
    ),
    (
        "ppo",
        "Modelled: buffered epoch persistency (Epoch) and the BROI controller with its \
         Equation 2 priority and remote entries; an RDMA NIC with link latency and bandwidth, \
         Sync and BSP. Not modelled: the paper's network model that \"correlates the average \
         time with epoch size\" (its figures are not given; pmlab uses ConnectX-3 FDR's).",
    ),
    (
        "lalea",
        "Modelled: REDU, LAD, LALEA, BLOM and their combinations with real log bytes, commit \
         stalls, in-place updates and per-scheme recovery; BLOM's headers and LAD's staged \
         lines (from their first store) take ADR (WPQ) entries. Not modelled: any write \
         buffering behind the 16-entry ADR buffer that the paper's DRAMSim2-based controller \
         may have.",
    ),
    (
        "pmec",
        "Measured, not simulated: pmec and ISA-L run on this machine's CPU and DRAM. Not \
         available here: Optane PM and its XPLine buffer, and the paper's 16+ cores, so the \
         paper's absolute throughputs and thread counts do not transfer; the comparison with \
         ISA-L does.",
    ),
    (
        "nvcache",
        "Measured, not simulated: real `mpiexec` (MPICH), libpmem on /dev/shm as the NVRAM, \
         files on this machine's ext4; several hosts emulated on this one (private /dev/shm \
         each, nothing shared but MPI). Not available here: a cluster and a parallel file \
         system: the emulated hosts share one kernel, so plain MPI-IO reads another host's \
         data from the page cache they share, where real hosts would go over the network.",
    ),
];
