"""Privacy audits: black-box (any mechanism, plug-ins included: ``audit``) and, for the registered
mechanisms, white-box noise fits against the papers' formulas (``audits.lines``)."""
from .blackbox import AuditReport, audit, audit_sweep, default_pairs
from .bounds import Claim
from .pairs import FAMILIES, PairSpec

__all__ = ["AuditReport", "Claim", "FAMILIES", "PairSpec", "audit", "audit_sweep", "default_pairs"]
