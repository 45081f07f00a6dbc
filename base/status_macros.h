// RETURN_IF_ERROR and ASSIGN_OR_RETURN: early returns for absl::Status / absl::StatusOr.
// The project's one copy; every package uses it.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` from the enclosing function if it is not OK.
#define RETURN_IF_ERROR(expr)                                  \
  do {                                                         \
    ::absl::Status leash_status_ = (expr);                     \
    if (!leash_status_.ok()) return leash_status_;             \
  } while (false)

#define LEASH_STATUS_CONCAT_INNER_(a, b) a##b
#define LEASH_STATUS_CONCAT_(a, b) LEASH_STATUS_CONCAT_INNER_(a, b)

// ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (an absl::StatusOr<T>); on error returns its
// status, else assigns (moves) the value to `lhs`, which may be a declaration.
#define ASSIGN_OR_RETURN(lhs, expr) \
  LEASH_ASSIGN_OR_RETURN_IMPL_(LEASH_STATUS_CONCAT_(leash_statusor_, __LINE__), lhs, expr)

#define LEASH_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
