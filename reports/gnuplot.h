// Gnuplot: renders plots by running the external `gnuplot` program (Debian gnuplot-nox) on a
// script, writing each plot twice, as PNG (pngcairo, or the libgd png terminal when cairo is
// missing) and as SVG. The program is `gnuplot` on PATH, or $KVSIM_GNUPLOT when set.
// Invariants:
//   1. A plot is one script body (everything after `set terminal`/`set output`); the same body
//      renders both files, so PNG and SVG always show the same thing.
//   2. Nothing here throws; a missing gnuplot or a failed render is a Status naming the script.
// Not thread-safe: call from one thread (renders are sequential external processes).
#pragma once

#include <string>

#include "model/util/status.h"

namespace kv::reports {

// True when a gnuplot program can be run. *why says which program was tried when it cannot.
bool gnuplot_available(std::string* why = nullptr);

// Writes `base`.gp and renders `base`.png and `base`.svg from `body` (gnuplot commands that
// draw one plot). Data files the body names must exist. width/height in pixels. gnuplot runs in
// base's folder, and the script names files inside it by relative paths.
Status render_plot(const std::string& base, const std::string& body, int width = 900, int height = 560);

// Quotes a string for a gnuplot script (single quotes; embedded quotes doubled).
std::string gnuplot_quote(const std::string& text);

}  // namespace kv::reports
