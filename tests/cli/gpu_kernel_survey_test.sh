#!/usr/bin/env bash
# scripts/gpu-kernel-survey-summary on each committed kernel survey (reports/gpu/<run>/raw/)
# rebuilds its profiles and survey.md byte for byte: the reports, the kernel profiles and the
# decode-step checks of the presets stay what this kvsim computes (a change to a preset or to
# kvsim calibrate that moves them must regenerate the report). Usage: gpu_kernel_survey_test.sh KVSIM
set -euo pipefail
kvsim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# folder:preset the survey's percentages and decode-step check are against
for run in 2026-11-27-h200:h200 2026-11-27-h100:h100-sxm; do
  report=reports/gpu/${run%%:*}
  mkdir -p "$work/$run"
  cp -r "$report/raw" "$work/$run/raw"
  scripts/gpu-kernel-survey-summary "$work/$run" --kvsim "$kvsim" --base-gpu "${run##*:}" >/dev/null
  for f in survey.md profile-bf16.csv profile-fp8.csv; do
    # The rebuilt report names its own folder in the calibrate command lines.
    sed "s|$work/$run|$report|g" "$work/$run/$f" >"$work/$run/$f.named"
    if ! diff -u "$report/$f" "$work/$run/$f.named"; then
      echo "gpu_kernel_survey_test: $report/$f is not what scripts/gpu-kernel-survey-summary writes now"
      exit 1
    fi
  done
  grep -q "decode_step and prefill_step rows, one CUDA graph each" "$report/survey.md"
done
echo "gpu_kernel_survey_test: both surveys' survey.md and profiles rebuilt byte for byte"
