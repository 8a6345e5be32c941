"""What a reviewer reads: the weakness report (``weakness``, ``weakness_plots``, ``robustness``), failure cases (``failures``), the release decision (``decision``), the canaries / rankings / Pareto sections (``verdicts``), the campaign report's sections and HTML (``sections``, ``campaign_report``, ``reports/templates/campaign_report.html.j2``). Asset face: ``hcat_pipeline.assets.reports``.
"""
