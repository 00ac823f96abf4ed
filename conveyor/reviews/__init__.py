"""The review queue: results their agent was unsure of, waiting for a person.

    queue        the backlog, one review, a reviewer's decision (accept / correct)
    corrections  a correction applied to a result and validated by its document type
    pages        the task's document: pages as PNG, the words on them
    metrics      backlog, time to review, fields corrected, accuracy as reviewed

A review is not a task status: the task is `completed`; its review is `pending`, then
`accepted` or `corrected`. Each agent's threshold (`review_below`) is
conveyor.queue.reviews, beside the limits; the words behind each field are found by
conveyor.agents.evidence. docs/reviews.md tells the whole story.
"""
