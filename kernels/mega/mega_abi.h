/* The tables of a megakernel, shared by the host that builds them (src/mega/) and the generated
   dispatcher that reads them (kernels/mega/megakernel.cuh). Plain fixed-size C types only.

   A megakernel runs the tasks of a segment of plan steps in one persistent launch. A task is one
   CTA of one of the steps' kernels (a "task kernel"), run by a CTA of the megakernel with the
   task's block index in place of blockIdx. Each CTA of the megakernel walks its own queue of
   tasks in order. Before a task starts, the CTA waits until every counter the task's kernel
   depends on has reached its target; after the task, it adds one to its kernel's counter. */
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

/* One task kernel: a grid of tasks with the block size and arguments of the standalone kernel. */
struct SinterMegaKernel {
  unsigned int function;   /* which generated function runs its tasks (the dispatcher's case) */
  unsigned int threads;    /* its block size; the megakernel's other threads wait */
  unsigned int grid_x, grid_y, grid_z;
  unsigned int first_wait; /* into the waits table */
  unsigned int wait_count;
  unsigned int counter;    /* the counter each of its tasks adds one to when done */
  unsigned long long args_offset; /* its argument struct, in the argument buffer */
};

/* Wait until counters[counter] >= (epoch + 1) * tasks: every task of the producer kernel done. */
struct SinterMegaWait {
  unsigned int counter;
  unsigned int tasks;
};

/* One task: a kernel and the linear index of its block. SINTER_MEGA_LOCAL in `block`: every task
   it waits for ran earlier on the same CTA, so it skips the counters (the CTA's barriers order
   those writes before it). */
#define SINTER_MEGA_LOCAL 0x80000000u
struct SinterMegaTask {
  unsigned int kernel;
  unsigned int block;
};

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
  const struct SinterMegaKernel* kernels;
  const struct SinterMegaWait* waits;
  const struct SinterMegaTask* tasks;  /* every CTA's queue, one after the other */
  const unsigned int* queue_start;     /* CTA c runs tasks[queue_start[c] .. queue_start[c + 1]) */
  const char* args;
  unsigned long long* counters;        /* counter i at counters[i * SINTER_MEGA_COUNTER_STRIDE] */
  unsigned long long* control;         /* SINTER_MEGA_CONTROL_WORDS, one per line */
  struct SinterMegaFault* fault;       /* host-mapped */
  unsigned long long* trace;           /* SINTER_MEGA_TRACE_WORDS per task, in task order; null: off */
  unsigned long long watchdog_ns;
};

#endif
