// EMBER_RT_LAZY: written before a function of the runtime headers that is not a template,
// it makes the function a template of no parameter of its own (`template <class = void>`).
// Calls are unchanged: the template argument is never deduced, so the parameters convert
// as before, and overload resolution among such functions is the same.
//
// Why: the compiler instantiates the templates that a function's body uses (parallel_for
// with each lambda, map_lanes, each micro-kernel of a table, std::vector's members) when it
// reads the body, even if nothing calls the function, and it does that again in every
// translation unit: a precompiled header keeps the parsed declarations but not these
// pending instantiations. In a template, they wait until a kernel calls it. With the
// other two measures of docs/architecture.md ("The fixed cost of a unit"), this took the
// compile of a unit that holds no kernel from 0.41 s to 0.05 s (g++ 12, AVX2).
// tests/python/test_runtime_headers.py checks that every inline function of the headers is
// a template.
#pragma once

#define EMBER_RT_LAZY template <class = void>
