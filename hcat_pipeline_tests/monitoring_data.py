"""A small bank's documents, one topic a document (its stratum known), stored as the lineage's chunks /
chunk_embeddings / topic_strata tables, for the monitoring tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

TOPICS = {
    "mortgages": [
        "A fixed-rate mortgage keeps the same interest rate for the whole term of the loan.",
        "The bank lends up to eighty percent of the property value for a first home purchase.",
        "Borrowers can repay up to ten percent of the mortgage balance each year without an early repayment fee.",
        "A mortgage application needs proof of income for the last three months and a valid identity document.",
        "The valuation of the property is ordered by the bank and paid for by the applicant.",
        "Mortgage offers remain valid for six months from the date the offer letter is issued.",
        "Variable-rate mortgages follow the central bank base rate plus a fixed margin stated in the offer.",
        "Missing two consecutive mortgage payments triggers a call from the arrears support team.",
    ],
    "credit cards": [
        "The standard credit card has an annual fee of forty-five euros charged on the account anniversary.",
        "Purchases made abroad carry a foreign transaction fee of two and a half percent of the amount.",
        "Cardholders can raise their credit limit once every six months after a credit review.",
        "A lost or stolen card must be blocked at once through the mobile app or the card hotline.",
        "The minimum monthly repayment is three percent of the outstanding balance or twenty-five euros.",
        "Interest is not charged on purchases when the full statement balance is paid by the due date.",
        "Cash withdrawals with a credit card are charged interest from the day of the withdrawal.",
        "Contactless payments are limited to fifty euros before the card asks for the PIN again.",
    ],
    "savings accounts": [
        "The easy access savings account pays a variable interest rate of two percent a year.",
        "Interest on savings accounts is calculated daily and paid into the account every month.",
        "The fixed-term deposit locks the money away for one, two or five years at a guaranteed rate.",
        "Withdrawing money from a fixed-term deposit before maturity costs ninety days of interest.",
        "Deposits are protected by the national guarantee scheme up to one hundred thousand euros per person.",
        "A children's savings account can be opened by a parent or legal guardian for any child under sixteen.",
        "Savings goals in the mobile app round up card purchases and move the change into savings.",
        "The notice savings account requires thirty days of notice before any withdrawal is paid.",
    ],
    "fraud": [
        "The bank never asks customers for their full PIN or password by phone, email or text message.",
        "Customers who suspect fraud on their account should call the fraud line, which is open every day.",
        "Unauthorised card transactions reported within thirteen months are refunded after an investigation.",
        "A push payment scam happens when a customer is tricked into sending money to a fraudster's account.",
        "The bank may hold a payment for up to four business days when it looks like a scam.",
        "Fraud alerts are sent by text message and ask the customer to confirm or reject the transaction.",
        "Customers should forward phishing emails that pretend to come from the bank to the security team.",
        "A new payee added from an unrecognised device needs a one-time passcode before the first payment.",
    ],
    "transfers": [
        "Domestic transfers in euros arrive in the receiving account within ten seconds, every day of the year.",
        "International wire transfers outside the euro area take up to four business days to arrive.",
        "A wire transfer to another currency is converted at the bank's daily exchange rate plus a margin.",
        "The daily limit for transfers in the mobile app is ten thousand euros unless raised in a branch.",
        "A standing order repeats a fixed payment on a chosen day of every week or month.",
        "A transfer sent to the wrong account can be recalled, but the bank cannot guarantee the money returns.",
        "Transfers above fifteen thousand euros to a new payee need a call from the payments team.",
        "The sender pays all transfer fees unless the shared charges option is chosen for a wire transfer.",
    ],
}


def write_bank_corpus(warehouse: Path, embed) -> dict[int, str]:
    """chunks (two sentences each), chunk_embeddings and topic_strata (stratum = the topic) in ``warehouse``;
    returns stratum → label."""
    rows = []
    for g, (topic, sentences) in enumerate(TOPICS.items()):
        for i in range(0, len(sentences), 2):
            rows.append({"chunk_id": f"{topic[:4]}-{i // 2}", "doc_id": topic, "text": " ".join(sentences[i : i + 2]), "stratum": g,
                         "stratum_label": topic})  # fmt: skip
    frame = pl.DataFrame(rows)
    vectors = np.asarray(embed(frame["text"].to_list()), dtype=np.float32)
    warehouse.mkdir(parents=True, exist_ok=True)
    frame.select("chunk_id", "doc_id", "text").write_parquet(warehouse / "chunks.parquet")
    pl.DataFrame({"chunk_id": frame["chunk_id"], "embedding": vectors}, schema={"chunk_id": pl.String, "embedding": pl.Array(pl.Float32, vectors.shape[1])}).write_parquet(warehouse / "chunk_embeddings.parquet")
    frame.select("chunk_id", pl.col("stratum").cast(pl.Int32), "stratum_label", pl.lit(0.0, dtype=pl.Float32).alias("x"),
                 pl.lit(0.0, dtype=pl.Float32).alias("y")).write_parquet(warehouse / "topic_strata.parquet")  # fmt: skip
    return dict(enumerate(TOPICS))


def pools() -> dict[int, list[str]]:
    return {g: list(s) for g, s in enumerate(TOPICS.values())}
