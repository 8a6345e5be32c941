"""Three short documents of a fictional bank: the corpus of the end-to-end tests (a few documents, real prose)."""

DOCS = {
    "overdraft.md": """# Overdraft fees at Northbridge Savings

An arranged overdraft at Northbridge Savings costs 19.9 percent a year on the amount overdrawn. There is no monthly fee for an arranged overdraft.

An unarranged overdraft is charged a flat fee of 6 pounds a day, and at most 60 pounds in one calendar month. Payments that would take the account past the arranged limit are refused.

Customers can ask to raise the arranged limit in the mobile app. A decision on a higher limit is given within two working days.
""",
    "cards.md": """# Lost and stolen cards

A lost or stolen debit card must be reported by phone on 0800 123 456, which is open every day of the year. The card is blocked as soon as it is reported.

A replacement debit card arrives within five working days. An urgent replacement can be sent by courier for a fee of 15 pounds and arrives the next working day.

Customers are not liable for payments made with a card after it was reported lost. Payments made before the report are investigated case by case.
""",
    "mortgages.md": """# Repaying a mortgage early

A fixed-rate mortgage at Northbridge Savings can be overpaid by up to 10 percent of the balance each year without an early repayment charge.

Overpayments above 10 percent during the fixed period carry an early repayment charge of 3 percent of the excess amount. There is no early repayment charge once the fixed period has ended.

A request to repay the whole mortgage is answered with a redemption statement within seven days. The statement is valid for thirty days.
""",
}
