"""All cause knowledge, in one folder: what the playbook knows about causes, apart from the code that measures.

    causes.py       the catalog: each cause's id, title, fix, next measurement, lab, event kinds and phases; which
                    causes can explain each kind of lost time (accounting buckets), fault events, Xid codes
    ids.py          the cause ids as names (ids.PERIODIC_STALL): code outside this folder never spells an id
    signatures.py   how strongly each signature an analyzer reports points at each cause, with the reasons
    environment.py  which causes a changed setting, version or piece of hardware can produce (regression triage)

A test (tests/knowledge/test_knowledge.py) fails when a cause id is written as a literal outside this folder and the tests.
"""
