/* run.c — `physc run` (see run.h): the main job, from a checked system to a report, as a
   sequence of stages over one RunState (run_internal.h): choose the model and its settings,
   compile, open the run's folder (run_folder.c), make the data (run_data.c), train
   (run_train.c), evaluate (run_eval.c), report (run_report.c, app/report.c). */
#include "run_internal.h"
#include "core/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/blas_cpu.h"
#include "dist.h"
#include "integrators/fixed_steps.h"
#include "report.h"
#include "trained.h"

int run_note_failure(const RunOptions *o, const char *why) {
    if (o->failure && o->failure_len) snprintf(o->failure, o->failure_len, "%s", why);
    return 1;
}

int run_output_failed(int rc, const char *err) {
    if (rc) fprintf(stderr, "physc: run: %s\n", err);
    return rc ? 1 : 0;
}

/* The solvers `physc run` supports so far; *where is the setting (first_line 0: a default).
   Data: dopri5, or a fixed-step integrator that steps this system (its constraints, its
   `state so3` bodies); reference rollouts: dopri5. */
static bool check_settings(const System *sys, Loc *where, char *err, size_t errlen) {
    int id = prt_integrator_find(sys->data.solver);
    *where = sys->data.solver_at;
    if (id != PRT_INT_DOPRI5) {
        const PrtIntegratorInfo *in = &prt_integrators[id];
        if (!prt_fixed_step_integrator((PrtIntegrator)id) || (!in->constraints && sys->nconstraints > 0) ||
            (!in->so3 && sys->nrotation_bodies > 0)) {
            snprintf(err, errlen, "the data's solver %s cannot step this system (%s)", in->name,
                     !prt_fixed_step_integrator((PrtIntegrator)id) ? "not a fixed-step integrator of a system's dynamics"
                     : sys->nconstraints > 0 && !in->constraints ? "it ignores constraints; use rattle or dopri5"
                                                     : "it does not handle `state so3` bodies; use liet2 or dopri5");
            return false;
        }
    } else if (sys->data.substeps != 1) {
        snprintf(err, errlen, "dopri5 chooses its own steps: `substeps` is for a fixed-step data solver");
        return false;
    }
    if (!strcmp(sys->eval.solver, "dopri5")) return true;
    *where = sys->eval.solver_at;
    snprintf(err, errlen, "physc run evaluates with dopri5 only so far, not %s", sys->eval.solver);
    return false;
}

/* Under mpirun, the processes share the shards: a run of K > 1 processes names its shard count
   (`train { shards S }`: the bits depend on it, and are then those of one process), and has
   a shard for every process. 0, or -1 with the counts that work. */
static int check_processes(const System *sys, char *err, size_t errlen) {
    int K = dist_size(), S = sys->train.shards;
    if (K == 1) return 0;
    if (!S)
        return prt_fail(err, errlen, "%d processes share each minibatch's shards: give the train block `shards S` (S from "
                        "%d to %d; the trained parameters depend on S, and are the same bits on any number of processes up "
                        "to S)", K, K, PRT_TRAIN_MAX_SHARDS);
    if (K > S)
        return prt_fail(err, errlen, "%d processes but %d shards: each process computes at least one shard; run 1 to %d "
                        "processes, or raise `shards` to %d or more (at most %d)", K, S, S, K, PRT_TRAIN_MAX_SHARDS);
    return 0;
}

/* The model, its precision and configuration, the run's sizes, and the memory they need:
   0, or the exit status (the refusal printed). */
static int choose_model(RunState *r) {
    System *sys = r->sys;
    const RunOptions *o = r->o;
    const char *why = trained_pick(sys, o->model, &r->md);
    if (why) {
        fprintf(stderr, "physc: run: %s%s%s\n", why, o->model ? ": " : "", o->model ? o->model : "");
        if (sys->nmodels) {
            fprintf(stderr, "  (models:");
            for (int i = 0; i < sys->nmodels; i++) fprintf(stderr, " %s", sys->models[i].name);
            fprintf(stderr, ")\n");
        }
        return 1;
    }
    r->precision = o->precision ? o->precision : sys->train.precision;
    if (strcmp(r->precision, "f32") && strcmp(r->precision, "f64")) {
        fprintf(stderr, "physc: run: --precision takes f32 or f64, not '%s'\n", r->precision);
        return 2;
    }
    Loc where;
    bool supported = trained_config(sys, r->md, !strcmp(r->precision, "f32"), &r->cfg, &where, r->err, sizeof r->err);
    if (supported && !check_settings(sys, &where, r->err, sizeof r->err)) supported = false;
    if (!supported) {
        if (where.first_line > 0 && o->diags) diag_error(o->diags, where, "%s", r->err);
        else fprintf(stderr, "physc: run: %s\n", r->err);
        return run_note_failure(o, r->err);
    }
    const Model *md = r->md;
    r->epochs = o->epochs > 0 ? o->epochs : md->epochs > 0 ? md->epochs : sys->train.epochs;
    r->seed = o->seed >= 0 ? o->seed : sys->data.seed;
    r->threads = o->threads > 0 ? o->threads : sys->train.threads;
    r->ntrain = o->ntrain > 0 ? o->ntrain : sys->data.ntrain;
    if (check_processes(sys, r->err, sizeof r->err) != 0) { /* (the same verdict on every process: rank 0 says it) */
        if (dist_rank() == 0) fprintf(stderr, "physc: run: %s\n", r->err);
        return run_note_failure(o, r->err);
    }
    if (run_check_memory(r, r->err, sizeof r->err) != 0) {
        fprintf(stderr, "physc: run: %s\n", r->err);
        return run_note_failure(o, r->err);
    }
    return 0;
}

/* The system's kernels for this model's training: 0, or -1 */
static int compile(RunState *r) {
    double t0 = now_s();
    if (!compiled_open_model(r->sys, &r->c, 2, r->md, r->err, sizeof r->err)) return -1;
    r->compiled = true;
    r->compile_ms = (now_s() - t0) * 1e3;
    prt_blas_set_threads((int)r->threads); /* (after the JIT: OpenBLAS's idle workers would spin through it) */
    if (r->out) { /* (flushed: output to a file or pipe is block-buffered, and making a large system's data takes long) */
        const Compiled *c = &r->c;
        fprintf(r->out, "system %s: %d %s, %d %s; %d %s compiled in %.0f ms (lowering %.1f ms, %s %.0f ms)\n", r->sys->name,
                c->ps.N, noun(c->ps.N, "coordinate", "coordinates"), c->ps.C, noun(c->ps.C, "constraint", "constraints"),
                c->k.n, noun(c->k.n, "kernel", "kernels"), r->compile_ms, c->lower_ms,
                jit_from_cache(c->jit) ? "code from the cache" : "LLVM", c->jit_ms);
        fflush(r->out);
    }
    return 0;
}

static void run_close(RunState *r) {
    prt_run_unlock(&r->lock);
    prt_eval_result_free(&r->ev);
    prt_eval_result_free(&r->ev_known);
    prt_train_result_free(&r->tr);
    free(r->theta);
    prt_model_close(&r->m);
    run_data_free(&r->data);
    if (r->compiled) compiled_close(&r->c);
    free(r->dir), free(r->ckpt);
}

/* Under mpirun, rank 0's verdict on a stage it alone ran (its folder, its data) to every
   process, with what the others need of it; the others' own stage is theirs. They wait for
   it up to DIST_SOLO_TIMEOUT_S: making a data set may take long. */
static int agree(RunState *r, int stage, const char *what) {
    if (dist_size() == 1) return stage;
    int said[3] = {stage, r->resume, r->adopted};
    char err[256];
    if (dist_bcast(said, sizeof said, DIST_SOLO_TIMEOUT_S, what, err, sizeof err) != 0) dist_abort(err);
    if (dist_rank() > 0) r->resume = said[1], r->adopted = said[2];
    if (dist_rank() > 0 && said[0] != 0) r->rc = said[0] > 0 ? r->rc : 1;
    return dist_rank() > 0 && said[0] != 0 ? 1 : stage; /* (rank 0 reports its own failure) */
}

/* Every process compiled the same program with the same options as rank 0, or the job ends */
static void same_fingerprint(RunState *r) {
    PrtFingerprint lead = r->fp;
    char err[256];
    if (dist_bcast(&lead, sizeof lead, DIST_TIMEOUT_S, "rank 0's fingerprint", err, sizeof err) != 0) dist_abort(err);
    if (memcmp(lead.part, r->fp.part, sizeof lead.part) != 0)
        dist_abort("this process's program, data, model or training settings differ from rank 0's (the run's "
                   "fingerprint): every process must run the same command on the same files");
}

int run_model(System *sys, const RunOptions *o) {
    bool lead = dist_rank() == 0; /* (one process of one without mpirun) */
    RunState r = {.sys = sys, .o = o, .out = o->quiet || !lead ? NULL : stdout, .lock = {-1}};
    r.tty = r.out && isatty(fileno(r.out)) && dist_size() == 1;
    int rc = choose_model(&r);
    if (rc) return rc;
    run_say_when_stopped(&r, RUN_BEFORE_TRAINING);
    int stage = compile(&r);
    if (stage == 0) stage = lead ? run_open_folder(&r) : run_join_folder(&r);
    if (stage == 0) run_say_when_stopped(&r, RUN_BEFORE_TRAINING); /* (the folder known) */
    stage = agree(&r, stage, "rank 0's run folder");
    if (stage == 0 && dist_size() > 1) same_fingerprint(&r);
    if (stage == 0 && lead) stage = run_data(&r);
    stage = agree(&r, stage, "rank 0 making or reading the data");
    if (stage == 0 && dist_size() > 1) stage = run_share_data(&r);
    if (stage == 0) stage = run_train(&r);
    if (stage == 0 && !lead) r.rc = 0, stage = 1; /* the others' part ends with training */
    if (stage == 0) stage = run_evaluate(&r);
    if (stage == 0) stage = run_report(&r);
    if (stage < 0) {
        if (r.err_at.first_line && o->diags) diag_error(o->diags, r.err_at, "%s", r.err);
        else fprintf(stderr, "physc: run: %s\n", r.err);
        r.rc = run_note_failure(o, r.err);
    }
    run_close(&r);
    run_release_stop_signals();
    return r.rc;
}
