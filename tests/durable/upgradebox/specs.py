"""The spec versions of the upgrade tests (``impl.py``'s steps): the first version, a version
changed AFTER the ask (a step added after the approval, a field with a default added to the
state, lines moved), and one changed BEFORE it (a check added before the approval)."""

from __future__ import annotations

HEAD = """\
from tests.durable.upgradebox.impl import Refund, Approval, Desk, AuditedDesk
import tests.durable.upgradebox.impl as impl
"""

#: The first version: load, ask, pay.
FIRST = HEAD + """
state Desk

async step load : str -> Refund      = impl.load
ask approve     : Refund -> Approval = "Refund {{ amount }} for {{ order }}?"
async step pay  : Approval -> str    = impl.pay

pipeline settle : str -> str ! NoOneToAsk | NoAnswer | BadAnswer {
    load;
    approve;
    pay;
}
"""

#: Changed after the ask: the state gains a field with a default, a step notifies the customer
#: after the payment, and a comment moves every line down.
AFTER = HEAD + """
# v2: customers are told once their refund is settled.
state AuditedDesk

async step load   : str -> Refund      = impl.load_audited
ask approve       : Refund -> Approval = "Refund {{ amount }} for {{ order }}?"
async step pay    : Approval -> str    = impl.pay_audited
async step notify : str -> str         = impl.notify

pipeline settle : str -> str ! NoOneToAsk | NoAnswer | BadAnswer {
    load;
    approve;
    pay;
    notify;
}
"""

#: Changed before the ask: a check runs between loading the refund and asking.
BEFORE = HEAD + """
state Desk

async step load  : str -> Refund      = impl.load
async step check : Refund -> Refund   = impl.check
ask approve      : Refund -> Approval = "Refund {{ amount }} for {{ order }}?"
async step pay   : Approval -> str    = impl.pay

pipeline settle : str -> str ! NoOneToAsk | NoAnswer | BadAnswer {
    load;
    check;
    approve;
    pay;
}
"""

#: A changed output type of a step the runs passed: a claim with a reason where a refund was.
RETYPED = HEAD.replace("AuditedDesk", "AuditedDesk, Claim") + """
state Desk

async step load : str -> Claim       = impl.load_claim
ask approve     : Claim -> Approval  = "Refund {{ amount }} for {{ order }}?"
async step pay  : Approval -> str    = impl.pay

pipeline settle : str -> str ! NoOneToAsk | NoAnswer | BadAnswer {
    load;
    approve;
    pay;
}
"""

#: Changed after the ask, with a state type a first-version state does not fit (no defaults)…
UNMIGRATED = HEAD.replace("AuditedDesk", "AuditedDesk, SourcedDesk") + """
state SourcedDesk

async step load   : str -> Refund      = impl.load_sourced
ask approve       : Refund -> Approval = "Refund {{ amount }} for {{ order }}?"
async step pay    : Approval -> str    = impl.pay_sourced
async step notify : str -> str         = impl.notify_sourced

pipeline settle : str -> str ! NoOneToAsk | NoAnswer | BadAnswer {
    load;
    approve;
    pay;
    notify;
}
"""

#: …and the same with its typed migration from the first version's state.
MIGRATED = UNMIGRATED.replace("state SourcedDesk\n", """state SourcedDesk

# runs of the first version move with their states migrated
fn migrate_state : Desk -> SourcedDesk = impl.from_desk
""")

#: The changed output type of ``load`` (:data:`RETYPED`) with its typed migration…
RETYPED_MIGRATED = RETYPED.replace("state Desk\n", """state Desk

# runs that loaded a refund move with it migrated to a claim
fn migrate_output_load : Refund -> Claim = impl.claim_of
""")

#: …and with a migration that fails on some of the recorded refunds.
RETYPED_FAILING = RETYPED_MIGRATED.replace("impl.claim_of", "impl.claim_of_small")

#: The first version with ``load`` renamed ``fetch`` (same place, same types), undeclared…
RENAMED_UNDECLARED = FIRST.replace("step load :", "step fetch :").replace("    load;", "    fetch;")

#: …and declared.
RENAMED = RENAMED_UNDECLARED.replace("state Desk\n", "state Desk\n\nrename load -> fetch\n")

#: The first version with the ask the runs wait at renamed ``confirm``, declared.
RENAMED_ASK = (FIRST.replace("ask approve     :", "ask confirm     :").replace("    approve;", "    confirm;")
               .replace("state Desk\n", "state Desk\nrename approve -> confirm\n"))
