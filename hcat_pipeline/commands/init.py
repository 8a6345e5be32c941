"""``hcat init [--corpus DIR] [--http URL] [--out FILE]``: a commented campaign file for a new user.

The file is validated (``campaign_spec.parse_campaign``) before it is written, and an existing file is never
overwritten without ``--force``. Every value written is a default of ``CampaignSpec`` unless an option set it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hcat_pipeline.commands import command

INIT_CERTIFY_BELOW = 0.10  # what `hcat init` writes: the default campaign's level (campaign.yaml), 29 probes a gate

TEMPLATE = """\
# Campaign file written by `hcat init`. Run it with:  hcat campaign --config {out_name}
# Schema: hcat_pipeline/campaign_spec.py (CampaignSpec). Unknown keys and wrong values are refused with their line.
name: {name}

intended_use:                    # stated before the system is validated (HCAT §1.2); in the night's plan and its sign-off
  purpose: ""                    # what the system is for, in a sentence
  users: ""                      # who uses it, e.g. branch staff answering customers' questions
  in_scope: []                   # the uses it is validated for, e.g. ["questions on the published fee schedule"]
  out_of_scope: []               # the uses it is not, e.g. ["advice on an individual customer's account"]
  decision: ""                   # the decision this evaluation supports, e.g. "release to the pilot branches"
signoff_roles: [validator]       # who must sign a night's release (hcat sign, the review page's /release), e.g. [validator, risk officer]

corpus:
  # Your documents: folders, files or globs (.txt .md .html .jsonl .pdf), relative to this file.
  paths: {paths}
  # The embedded Python language reference: by default only when no paths are given.
  # include_embedded: false

generation:
  mode: grounded                 # grounded: each reference is a source sentence, the LLM writes the question for it
  sample_size: {sample_size}                # chunks drawn over the topic strata
  target_size: {target_size}               # the version should hold 200-500 cases, happy path 50-60 % of them (golden-eval §2.2-2.3);
  happy_path_share: {happy_share}         # the freeze reports the composition against these and says why it falls short
  cases_per_stratum: {cases_per_stratum}           # happy-path cases each stratum should end with (after the validity checks); delete
                                 # this line to let happy_path_share set the count (more cases, longer generation)
  max_requests_per_stratum: {max_requests}   # LLM requests a stratum may spend on them
  query_types: [{query_types}]
  robustness:                    # variants and categories per golden set (HCAT §6.1, §4; golden-eval §2, §10.4, §11.2); the attack
    {robustness}   # suites (distractor, injection, jailbreak, pii_elicitation, ood, yes_no, …) are sized by certify_below unless set here
  bias_attributes: [{attributes}]
  # pairs_per_attribute: {pairs}        # counterfactual pairs per attribute (default: the bias gate's plan at certify_below) …
  max_bias_share: {bias_share}             # … and at most this share of all cases
  seed: 0

golden_set_version: latest       # or a frozen version, e.g. gs-53fd4588afcf
max_cases: {max_cases}                    # cases per system beyond what the gates need (0 = all)
certify_below: {certify_below}              # every zero-tolerance gate's PASS certifies a failure rate below this (exact 95 % bound:
                                 # {probes} probes per gate without a failure); the attack suites are generated for it (gates.spec.suite_plan:
                                 # {suites}); 0.05 needs {probes_05} probes a gate — about twice the answers
reuse: deterministic_local

systems:
{systems}
# Canaries: planted-fault copies of a system above (its own answers with one fault applied; no extra LLM call).
# Each fault must get the verdicts it declares (a gate FAILs, a metric moves, ranked below, off the frontier);
# canary_detection and the report's "Would these gates catch a broken system?" say whether it did. A missed
# canary means the gates would let such a broken system through. Canaries are never ranked or released.
canaries:
  - of: {canary_parent}
    # faults: [{faults}]
"""

LOCAL_SYSTEMS = """\
  # Reference systems on the packaged local LLM: the same model with and without retrieval.
  - system_id: closed_book
    retriever: closed_book
    prompt: rag_closed_book_v1
  - system_id: hybrid
    retriever: hybrid
"""

HTTP_SYSTEM = """\
  # Your RAG service: the query is POSTed as JSON; answer_path / contexts_path say where the reply puts them.
  - system_id: my_rag
    http:
      url: {url}
      request_template: '{{"query": "{{{{query}}}}"}}'
      answer_path: answer
      contexts_path: contexts
      # auth_env_var: MY_RAG_TOKEN   # the env var holding the secret (never the secret itself)
"""


def render(corpus: str | None, http: str | None, out_name: str, name: str = "my-campaign") -> str:
    from hcat_pipeline.campaign_spec import CampaignSpec, GenerationSpec
    from hcat_pipeline.gates.canaries import FAULTS
    from hcat_pipeline.gates.certificate import probes_needed
    from hcat_pipeline.gates.spec import load_gates, suite_plan
    from hcat_pipeline.golden.grounded import CASES_PER_STRATUM

    g, spec = GenerationSpec(), CampaignSpec.model_fields
    r, level = g.robustness, INIT_CERTIFY_BELOW
    plan = suite_plan(load_gates(), level)
    return TEMPLATE.format(
        out_name=out_name, name=name, paths=f"[{corpus!r}]".replace("'", '"') if corpus else "[]", sample_size=g.sample_size,
        cases_per_stratum=CASES_PER_STRATUM, target_size=g.target_size, happy_share=g.happy_path_share, max_requests=g.max_requests_per_stratum, query_types=", ".join(g.query_types),
        robustness="{" + ", ".join(f"{k}: {v}" for k, v in r.model_dump(exclude_none=True).items()) + "}", attributes=", ".join(g.bias_attributes),
        pairs=-(-plan["counterfactual_pairs"] // len(g.bias_attributes)), bias_share=g.max_bias_share, certify_below=f"{level:.2f}",
        probes=probes_needed(level), probes_05=probes_needed(0.05), suites=", ".join(f"{k} {v}" for k, v in plan.items()),
        max_cases=spec["max_cases"].default, systems=LOCAL_SYSTEMS + (HTTP_SYSTEM.format(url=http) if http else ""),
        canary_parent="my_rag" if http else "hybrid", faults=", ".join(FAULTS),
    )  # fmt: skip


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", default=None, help="folder (or glob) of your documents")
    p.add_argument("--http", default=None, help="URL of your RAG service: adds an http system")
    p.add_argument("--out", default="campaign.yaml", help="file to write (default campaign.yaml in this folder)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")


@command("init", "write a commented campaign file for your documents (and your RAG service)", _args)
def _init(args: argparse.Namespace) -> int:
    from hcat_pipeline.campaign_spec import CampaignFileError, parse_campaign

    out = Path(args.out)
    if out.exists() and not args.force:
        print(f"error: {out} exists (use --force to overwrite)", file=sys.stderr)
        return 2
    if args.corpus and not any(ch in args.corpus for ch in "*?[") and not Path(args.corpus).expanduser().exists():
        print(f"error: --corpus {args.corpus}: no such file or folder", file=sys.stderr)
        return 2
    text = render(args.corpus, args.http, out.name)
    try:
        parse_campaign(text, str(out))
    except CampaignFileError as e:  # a template bug, never the user's input
        print(f"error: the generated file does not validate: {e}", file=sys.stderr)
        return 1
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}: run `hcat campaign --config {out}`")
    return 0
