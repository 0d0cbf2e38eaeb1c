/* The tables of a megakernel, shared by the host that builds them (src/mega/) and the generated
   dispatcher that reads them (kernels/mega/megakernel.cuh). Plain fixed-size C types only.

   A megakernel runs the tasks of a segment of plan steps in one persistent launch. A task is one
   CTA of one of the steps' kernels (a "task kernel"), run by a CTA of the megakernel with the
   task's block index in place of blockIdx. Each CTA of the megakernel walks its own queue of
   tasks in order. Before a task starts, the CTA waits until every counter the task depends on
   has reached its target; after the task, it adds one to the counters that count it (its
   kernel's whole grid, a range of its blocks) where a task on another CTA waits for them.

   A CTA's queue is an image in device memory: consecutive chunks, each a SinterMegaChunk header,
   its task records, their waits and the argument structs its tasks read (each 64-aligned), at
   most SinterMegaParams::chunk_bytes. The CTA copies a chunk into shared memory whole (one bulk
   copy) while the chunk before it runs, so a task's description, waits and arguments are in
   shared memory when it starts. */
#ifndef SINTER_KERNELS_MEGA_ABI_H
#define SINTER_KERNELS_MEGA_ABI_H

/* Counters are 64-bit, monotonic over launches, one per 128-byte line. */
#define SINTER_MEGA_COUNTER_STRIDE 16
/* control words (device memory, one per line): the launch epoch, CTAs exited (monotonic), the
   abort flag, and the claim of the one CTA that writes the fault record */
#define SINTER_MEGA_EPOCH 0
#define SINTER_MEGA_EXITED 1
#define SINTER_MEGA_ABORT 2
#define SINTER_MEGA_FAULT_CLAIM 3
#define SINTER_MEGA_CONTROL_WORDS 4
/* trace words per task: start ns, end ns, SM and CTA ((sm << 32) | cta), waited ns */
#define SINTER_MEGA_TRACE_WORDS 4
/* SinterMegaTask::publish, publish_range: no counter to add to */
#define SINTER_MEGA_NO_COUNTER 0xffffffffu
/* SinterMegaTask::publish_ranks: its publish_range counter is added to on every rank of the
   group (SinterMegaParams::rank_counters), after a system-scope fence: a collective's arrivals */
#define SINTER_MEGA_PUBLISH_RANKS 1u
/* SinterMegaWait::tasks flag: tasks of other ranks (other GPUs) add to the counter, so it is read
   with a system-scope acquire */
#define SINTER_MEGA_WAIT_RANKS 0x80000000u

/* One task: everything the CTA needs to wait for, run and publish it, with its waits and
   arguments in the same chunk. 64 bytes. */
struct SinterMegaTask {
  unsigned int function;    /* which generated function runs it (the dispatcher's case) */
  unsigned int threads;     /* its kernel's block size; the megakernel's other threads wait */
  unsigned int grid_x, grid_y, grid_z;  /* its kernel's grid */
  unsigned int block_x;     /* its block index in that grid, x */
  unsigned int block_yz;    /* and y | z << 16 (grids are at most 65535 high and deep) */
  unsigned int kernel;      /* its task kernel (the trace, the watchdog's record) */
  unsigned int first_wait;  /* byte offset of its first SinterMegaWait in its chunk */
  unsigned int wait_count;  /* the counters it waits on that no earlier wait of this CTA covered
                               and that tasks of other CTAs add to */
  unsigned int publish;       /* its kernel's whole-grid counter, or SINTER_MEGA_NO_COUNTER */
  unsigned int publish_range; /* the counter of its range of blocks, or SINTER_MEGA_NO_COUNTER */
  unsigned int args_offset;   /* byte offset of its kernel's argument struct in its chunk (64-aligned) */
  unsigned int args_bytes;    /* its size, rounded up to 16 (the host's record; the device reads offsets) */
  unsigned int publish_ranks; /* SINTER_MEGA_PUBLISH_RANKS or 0 */
  unsigned int prologue;      /* 1: thread 0 runs its function's prologue before its waits */
};

/* A chunk of a CTA's queue starts with this header (16 bytes); the chunk after it follows it in
   the image. */
struct SinterMegaChunk {
  unsigned int tasks;       /* task records right after this header: at least one */
  unsigned int next_bytes;  /* size of the next chunk (a multiple of 64); 0: this is the last */
  unsigned int first_task;  /* its first task's index in the segment's task order (the trace) */
  unsigned int reserved;
};

/* Where CTA c's queue starts in the image. */
struct SinterMegaQueue {
  unsigned long long offset;  /* of its first chunk (64-aligned) */
  unsigned int bytes;         /* that chunk's size; 0: the CTA has no tasks */
  unsigned int reserved;
};

/* Wait until counters[counter] >= (epoch + 1) * tasks: every task of the producer kernel done
   (tasks without the SINTER_MEGA_WAIT_RANKS flag; with it, the arrivals of every rank). */
struct SinterMegaWait {
  unsigned int counter;
  unsigned int tasks;
};

/* The argument struct of a collective's task kernels (kernels/mega/collective.cuh). */
#define SINTER_COLLECTIVE_ALL_REDUCE 0
#define SINTER_COLLECTIVE_ALL_GATHER 1
#define SINTER_COLLECTIVE_REDUCE_SCATTER 2
#define SINTER_COLLECTIVE_SUM 0
#define SINTER_COLLECTIVE_MAX 1
struct SinterCollectiveArgs {
  const char* in;            /* this rank's input */
  char* out;                 /* this rank's output */
  char* const* recv;         /* recv[q]: rank q's receive buffer (a device array of `world` pointers):
                                two halves (launch epoch parity) of `world` slots of slot_elems */
  unsigned long long slot_elems; /* elements of one rank's slot */
  unsigned int elem_bytes;
  unsigned int world, rank;
  unsigned int slice_elems;  /* elements a task moves (the last slice may be shorter) */
  unsigned int op;           /* SINTER_COLLECTIVE_ALL_REDUCE, _ALL_GATHER, _REDUCE_SCATTER */
  unsigned int reduce;       /* SINTER_COLLECTIVE_SUM, _MAX */
};

#ifdef __cplusplus
static_assert(sizeof(SinterCollectiveArgs) == 56, "SinterCollectiveArgs is 56 bytes on host and device");
/* The host lays chunks out with these sizes. */
static_assert(sizeof(SinterMegaTask) == 64, "SinterMegaTask is 64 bytes on host and device");
static_assert(sizeof(SinterMegaWait) == 8, "SinterMegaWait is 8 bytes on host and device");
static_assert(sizeof(SinterMegaChunk) == 16, "SinterMegaChunk is 16 bytes on host and device");
static_assert(sizeof(SinterMegaQueue) == 16, "SinterMegaQueue is 16 bytes on host and device");
#endif

/* What the watchdog records (in host-mapped memory, plain stores) when a wait outlasts the limit:
   the first CTA to time out writes the fields, then `hit`. */
struct SinterMegaFault {
  unsigned int hit;        /* 1 once the record is complete */
  unsigned int sm;
  unsigned int cta;
  unsigned int task;       /* index in the CTA's queue */
  unsigned int kernel;     /* the waiting task's kernel */
  unsigned int counter;    /* the counter it waited on */
  unsigned long long target;
  unsigned long long seen;
  unsigned long long epoch;
  unsigned long long waited_ns;
};

struct SinterMegaParams {
  const struct SinterMegaQueue* queues; /* by CTA */
  const char* image;                   /* every CTA's chunks (64-aligned) */
  /* the two chunk buffers in dynamic shared memory: at chunk_at (past the tasks' own dynamic
     shared memory, 128-aligned), chunk_bytes each (a multiple of 64, no chunk larger) */
  unsigned int chunk_at;
  unsigned int chunk_bytes;
  unsigned long long* counters;        /* counter i at counters[i * SINTER_MEGA_COUNTER_STRIDE] */
  unsigned long long* control;         /* SINTER_MEGA_CONTROL_WORDS, one per line */
  struct SinterMegaFault* fault;       /* host-mapped */
  unsigned long long* trace;           /* SINTER_MEGA_TRACE_WORDS per task, in queue order (CTA by CTA); null: off */
  unsigned long long watchdog_ns;
  /* every rank's `counters`, by rank (symmetric memory: the same layout on each rank), for the
     counters SINTER_MEGA_PUBLISH_RANKS adds to; null in a segment without collectives */
  unsigned long long* const* rank_counters;
  unsigned int world;                  /* entries of rank_counters */
  unsigned int rank;                   /* this rank's */
};

#endif
