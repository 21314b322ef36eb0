#!/usr/bin/env bash
# scripts/gpu-kernel-survey-summary on the committed H200 survey (reports/gpu/2026-11-27-h200/raw/)
# rebuilds the profiles and survey.md byte for byte: the report, the kernel profile and the
# decode-step check of the h200 preset stay what this kvsim computes (a change to the preset or
# to kvsim calibrate that moves them must regenerate the report). Usage: gpu_kernel_survey_test.sh KVSIM
set -euo pipefail
kvsim=$1
report=reports/gpu/2026-11-27-h200
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/survey"
cp -r "$report/raw" "$work/survey/raw"
scripts/gpu-kernel-survey-summary "$work/survey" --kvsim "$kvsim" >/dev/null
for f in survey.md profile-bf16.csv profile-fp8.csv; do
  # The rebuilt report names its own folder in the calibrate command lines.
  sed "s|$work/survey|$report|g" "$work/survey/$f" >"$work/$f"
  if ! diff -u "$report/$f" "$work/$f"; then
    echo "gpu_kernel_survey_test: $report/$f is not what scripts/gpu-kernel-survey-summary writes now"
    exit 1
  fi
done
grep -q "decode steps (12 decode_step rows" "$report/survey.md"
echo "gpu_kernel_survey_test: survey.md and both profiles rebuilt byte for byte"
