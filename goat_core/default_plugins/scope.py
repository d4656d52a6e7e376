"""Built-in scope resolution (DESIGN section 3). Placeholder until derivation lands."""

from __future__ import annotations

from goat_core.hookspecs import hookimpl
from goat_core.models import Derivation, Scope, ScopeRequest, ScopeResolution


@hookimpl(trylast=True)
def goat_resolve_scope(request: ScopeRequest) -> ScopeResolution | None:
    if request.project_id:
        return ScopeResolution(scope=Scope.pen(request.project_id), derivation=Derivation.PROJECT)
    return ScopeResolution(scope=Scope.global_(), derivation=Derivation.GLOBAL)
