/* SPDX-License-Identifier: MIT */
/*
 * Rendering of a migration's state for people: one plain line per update
 * (logs, pipes), a one-line progress bar redrawn in place (terminals), and
 * the final report with downtime as a sum of its parts next to the
 * downtime the guest saw.
 */
#ifndef MIGD_MIGVIEW_H
#define MIGD_MIGVIEW_H

#include <stdio.h>

#include "proto/control.pb-c.h"

void migd_mig_print_line(FILE *f, const Migd__MigInfo *m);
/* Redraws the current line (starts with '\r', no newline). */
void migd_mig_print_bar(FILE *f, const Migd__MigInfo *m, int width);
void migd_mig_print_report(FILE *f, const Migd__MigInfo *m);
/* Phase name in lower case ("iterate"). */
const char *migd_mig_phase_text(Migd__MigPhase p);
/* True for COMPLETED, FAILED, CANCELLED. */
int migd_mig_phase_terminal(Migd__MigPhase p);

#endif
